/* A C program whose HDF5 accesses are known: it prints each file selection it makes, one JSON line per
 * H5Dread/H5Dwrite ({"op", "kind", ...}), the ground truth the trace is compared with. */
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>

#define NX 60
#define NY 40

static void slab(const char *op, hsize_t *start, hsize_t *stride, hsize_t *count, hsize_t *block) {
    printf("{\"op\":\"%s\",\"kind\":\"hyperslab\",\"start\":[%llu,%llu],\"stride\":[%llu,%llu],"
           "\"count\":[%llu,%llu],\"block\":[%llu,%llu]}\n", op, start[0], start[1], stride[0], stride[1],
           count[0], count[1], block[0], block[1]);
}

int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : "known.h5";
    static double buf[NX * NY];
    for (int i = 0; i < NX * NY; i++) buf[i] = i;
    hid_t file = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    hsize_t dims[2] = {NX, NY}, chunk[2] = {10, 8};
    hid_t space = H5Screate_simple(2, dims, NULL);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(dcpl, 2, chunk);
    H5Pset_deflate(dcpl, 1);
    hid_t dset = H5Dcreate2(file, "/grid", H5T_NATIVE_DOUBLE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);

    /* row bands written one by one */
    for (hsize_t r = 0; r < NX; r += 10) {
        hsize_t start[2] = {r, 0}, stride[2] = {1, 1}, count[2] = {1, 1}, block[2] = {10, NY};
        hid_t fs = H5Dget_space(dset);
        H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, stride, count, block);
        hid_t ms = H5Screate_simple(2, block, NULL);
        H5Dwrite(dset, H5T_NATIVE_DOUBLE, ms, fs, H5P_DEFAULT, buf + r * NY);
        slab("write", start, stride, count, block);
        H5Sclose(ms);
        H5Sclose(fs);
    }
    /* strided reads: every 3rd row, columns in blocks of 2 every 5 */
    for (hsize_t c0 = 0; c0 < 3; c0++) {
        hsize_t start[2] = {c0, 1}, stride[2] = {3, 5}, count[2] = {20, 7}, block[2] = {1, 2};
        hid_t fs = H5Dget_space(dset);
        H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, stride, count, block);
        hsize_t n = 20 * 14;
        hid_t ms = H5Screate_simple(1, &n, NULL);
        H5Dread(dset, H5T_NATIVE_DOUBLE, ms, fs, H5P_DEFAULT, buf);
        slab("read", start, stride, count, block);
        H5Sclose(ms);
        H5Sclose(fs);
    }
    /* points */
    {
        hsize_t coords[4][2] = {{5, 7}, {59, 0}, {0, 39}, {30, 20}};
        hid_t fs = H5Dget_space(dset);
        H5Sselect_elements(fs, H5S_SELECT_SET, 4, &coords[0][0]);
        hsize_t n = 4;
        hid_t ms = H5Screate_simple(1, &n, NULL);
        H5Dread(dset, H5T_NATIVE_DOUBLE, ms, fs, H5P_DEFAULT, buf);
        printf("{\"op\":\"read\",\"kind\":\"points\",\"points\":[[5,7],[59,0],[0,39],[30,20]]}\n");
        H5Sclose(ms);
        H5Sclose(fs);
    }
    /* an irregular union of two boxes */
    {
        hsize_t s1[2] = {0, 0}, b1[2] = {2, 3}, s2[2] = {10, 30}, b2[2] = {1, 4}, one[2] = {1, 1};
        hid_t fs = H5Dget_space(dset);
        H5Sselect_hyperslab(fs, H5S_SELECT_SET, s1, one, one, b1);
        H5Sselect_hyperslab(fs, H5S_SELECT_OR, s2, one, one, b2);
        hsize_t n = 10;
        hid_t ms = H5Screate_simple(1, &n, NULL);
        H5Dread(dset, H5T_NATIVE_DOUBLE, ms, fs, H5P_DEFAULT, buf);
        printf("{\"op\":\"read\",\"kind\":\"points\",\"points\":[[0,0],[0,1],[0,2],[1,0],[1,1],[1,2],"
               "[10,30],[10,31],[10,32],[10,33]]}\n");
        H5Sclose(ms);
        H5Sclose(fs);
    }
    /* the whole dataset */
    H5Dread(dset, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf);
    printf("{\"op\":\"read\",\"kind\":\"hyperslab\",\"start\":[0,0],\"stride\":[1,1],\"count\":[1,1],"
           "\"block\":[%d,%d]}\n", NX, NY);
    H5Dclose(dset);
    H5Pclose(dcpl);
    H5Sclose(space);
    H5Fclose(file);
    return 0;
}
