/* The program of issue #36's static-binary report: 10 hyperslab writes of row bands, then 10 reads of them,
 * through one file dataspace re-selected each time. Prints each selection as a JSON line (the ground
 * truth), as known_accesses.c does.
 *
 *   row_bands FILE
 */
#include <hdf5.h>
#include <stdio.h>

int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : "bands.h5";
    static double buf[10 * 20];
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    hsize_t dims[2] = {100, 20}, block[2] = {10, 20};
    hid_t s = H5Screate_simple(2, dims, NULL), ms = H5Screate_simple(2, block, NULL);
    hid_t d = H5Dcreate2(f, "/bands", H5T_NATIVE_DOUBLE, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    for (int op = 0; op < 2; op++)
        for (hsize_t r = 0; r < 100; r += 10) {
            hsize_t start[2] = {r, 0};
            for (int i = 0; i < 10 * 20; i++) buf[i] = (double)(r * 20 + i);
            H5Sselect_hyperslab(s, H5S_SELECT_SET, start, NULL, block, NULL);
            herr_t ok = op == 0 ? H5Dwrite(d, H5T_NATIVE_DOUBLE, ms, s, H5P_DEFAULT, buf)
                                : H5Dread(d, H5T_NATIVE_DOUBLE, ms, s, H5P_DEFAULT, buf);
            if (ok < 0) return 1;
            printf("{\"op\":\"%s\",\"kind\":\"hyperslab\",\"start\":[%llu,0],\"stride\":[1,1],\"count\":[1,1],"
                   "\"block\":[10,20]}\n", op ? "read" : "write", r);
        }
    H5Sclose(ms);
    H5Sclose(s);
    H5Dclose(d);
    H5Fclose(f);
    return 0;
}
