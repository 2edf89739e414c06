/* An MPI program whose parallel-HDF5 accesses are known: each rank writes its band of rows of a shared
 * dataset (collectively), then reads a strided box; it prints each selection as a JSON line with its rank. */
#include <hdf5.h>
#include <mpi.h>
#include <stdio.h>

#define ROWS 16 /* per rank */
#define NY 12

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *path = argc > 1 ? argv[1] : "mpi.h5";
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_fapl_mpio(fapl, MPI_COMM_WORLD, MPI_INFO_NULL);
    hid_t file = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    hsize_t dims[2] = {(hsize_t)size * ROWS, NY};
    hid_t space = H5Screate_simple(2, dims, NULL);
    hid_t dset = H5Dcreate2(file, "/field", H5T_NATIVE_FLOAT, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    hid_t dxpl = H5Pcreate(H5P_DATASET_XFER);
    H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE);
    static float buf[ROWS * NY];
    for (int i = 0; i < ROWS * NY; i++) buf[i] = (float)(rank * 1000 + i);

    hsize_t start[2] = {(hsize_t)rank * ROWS, 0}, stride[2] = {1, 1}, count[2] = {1, 1}, block[2] = {ROWS, NY};
    hid_t fs = H5Dget_space(dset);
    H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, stride, count, block);
    hid_t ms = H5Screate_simple(2, block, NULL);
    H5Dwrite(dset, H5T_NATIVE_FLOAT, ms, fs, dxpl, buf);
    printf("{\"rank\":%d,\"op\":\"write\",\"start\":[%llu,0],\"stride\":[1,1],\"count\":[1,1],\"block\":[%d,%d]}\n",
           rank, start[0], ROWS, NY);
    H5Sclose(ms);
    H5Sclose(fs);

    /* every 2nd row of the next rank's band, 3 columns from column rank */
    hsize_t s2[2] = {(hsize_t)((rank + 1) % size) * ROWS, (hsize_t)rank}, st2[2] = {2, 1}, c2[2] = {ROWS / 2, 1},
            b2[2] = {1, 3};
    fs = H5Dget_space(dset);
    H5Sselect_hyperslab(fs, H5S_SELECT_SET, s2, st2, c2, b2);
    hsize_t n = ROWS / 2 * 3;
    ms = H5Screate_simple(1, &n, NULL);
    H5Dread(dset, H5T_NATIVE_FLOAT, ms, fs, dxpl, buf);
    printf("{\"rank\":%d,\"op\":\"read\",\"start\":[%llu,%d],\"stride\":[2,1],\"count\":[%d,1],\"block\":[1,3]}\n",
           rank, s2[0], rank, ROWS / 2);
    fflush(stdout);
    H5Sclose(ms);
    H5Sclose(fs);
    H5Pclose(dxpl);
    H5Dclose(dset);
    H5Sclose(space);
    H5Fclose(file);
    H5Pclose(fapl);
    MPI_Finalize();
    return 0;
}
