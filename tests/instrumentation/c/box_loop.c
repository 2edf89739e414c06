/* A loop's reads of one dataset, alike but for where each starts: 10,000 reads of 100x8 boxes of a
 * (4000, 64) float dataset. Prints each read's start, one JSON line per read. */
#include <hdf5.h>
#include <stdio.h>

int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : "boxes.h5";
    static float buf[4000 * 64];
    hsize_t dims[2] = {4000, 64}, chunks[2] = {512, 8}, box[2] = {100, 8};
    hid_t file = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    hid_t space = H5Screate_simple(2, dims, NULL), dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(dcpl, 2, chunks);
    hid_t d = H5Dcreate2(file, "/x", H5T_NATIVE_FLOAT, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    H5Dwrite(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf);
    hid_t ms = H5Screate_simple(2, box, NULL);
    for (long i = 0; i < 10000; i++) {
        hsize_t start[2] = {(hsize_t)(i * 7919 % 3900), (hsize_t)(i % 8 * 8)};
        H5Sselect_hyperslab(space, H5S_SELECT_SET, start, NULL, box, NULL);
        H5Dread(d, H5T_NATIVE_FLOAT, ms, space, H5P_DEFAULT, buf);
        printf("{\"start\":[%llu,%llu]}\n", (unsigned long long)start[0], (unsigned long long)start[1]);
    }
    H5Sclose(ms);
    H5Pclose(dcpl);
    H5Sclose(space);
    H5Dclose(d);
    H5Fclose(file);
    return 0;
}
