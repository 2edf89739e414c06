/* A program that opens its file again for each batch of reads (a common loop: open, read a batch, close).
 * Writes a (400, 8) gzip'd dataset of (100, 8) chunks, closes it, then 4 times: H5Fopen, H5Dopen, read rows
 * 2k and 2k+1 of chunk k's first rows twice (the second read of a chunk is a chunk-cache hit within the open),
 * H5Dclose, H5Fclose. Prints one JSON line per H5Fopen/H5Fclose, with its order. */
#include <hdf5.h>
#include <stdio.h>

int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : "reopen.h5";
    static double buf[400 * 8];
    hsize_t dims[2] = {400, 8}, chunks[2] = {100, 8}, row[2] = {1, 8};
    for (int i = 0; i < 400 * 8; i++) buf[i] = i;
    hid_t file = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    hid_t space = H5Screate_simple(2, dims, NULL), dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(dcpl, 2, chunks);
    H5Pset_deflate(dcpl, 1);
    hid_t d = H5Dcreate2(file, "/x", H5T_NATIVE_DOUBLE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf);
    H5Dclose(d);
    H5Sclose(space);
    H5Pclose(dcpl);
    H5Fclose(file);
    hid_t ms = H5Screate_simple(2, row, NULL);
    for (int k = 0; k < 4; k++) {
        file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
        printf("{\"ev\":\"open\"}\n");
        d = H5Dopen2(file, "/x", H5P_DEFAULT);
        space = H5Dget_space(d);
        for (int r = 0; r < 2; r++) {
            hsize_t start[2] = {(hsize_t)(2 * k + r), 0};
            H5Sselect_hyperslab(space, H5S_SELECT_SET, start, NULL, row, NULL);
            H5Dread(d, H5T_NATIVE_DOUBLE, ms, space, H5P_DEFAULT, buf);
        }
        H5Sclose(space);
        H5Dclose(d);
        H5Fclose(file);
        printf("{\"ev\":\"close\"}\n");
    }
    H5Sclose(ms);
    return 0;
}
