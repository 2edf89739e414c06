/* Reads of a 1-D and a 6-D dataset in long runs: 1500 one-element reads of /a, then one box of /b, four
 * times, then both in turn. Each 6-D record widens the interposer's batch of 1-D records past its buffer,
 * which must then be written first. Prints each read's start ({"d", "start"}, a box of /b is 1x2x1x2x1x3). */
#include <hdf5.h>
#include <stdio.h>

static void read_at(hid_t dset, hid_t fs, int rank, const hsize_t *start, const hsize_t *count, double *buf) {
    hsize_t n = 1;
    for (int k = 0; k < rank; k++) n *= count[k];
    H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL);
    hid_t ms = H5Screate_simple(1, &n, NULL);
    H5Dread(dset, H5T_NATIVE_DOUBLE, ms, fs, H5P_DEFAULT, buf);
    H5Sclose(ms);
    printf("{\"d\":\"%s\",\"start\":[", rank == 1 ? "a" : "b");
    for (int k = 0; k < rank; k++) printf(k ? ",%llu" : "%llu", start[k]);
    printf("]}\n");
}

int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : "widths.h5";
    static double buf[4096];
    hid_t file = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    hsize_t da[1] = {100}, db[6] = {2, 4, 2, 4, 2, 6};
    hid_t sa = H5Screate_simple(1, da, NULL), sb = H5Screate_simple(6, db, NULL);
    hid_t a = H5Dcreate2(file, "/a", H5T_NATIVE_DOUBLE, sa, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    hid_t b = H5Dcreate2(file, "/b", H5T_NATIVE_DOUBLE, sb, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Dwrite(a, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf);
    H5Dwrite(b, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf);
    hsize_t one[1] = {1}, box[6] = {1, 2, 1, 2, 1, 3};
    for (int round = 0; round < 6; round++) {
        int run = round < 4 ? 1500 : 1;
        for (int rep = 0; rep < (round < 4 ? 1 : 400); rep++) {
            for (int i = 0; i < run; i++) {
                hsize_t s[1] = {(hsize_t)(i % 100)};
                read_at(a, sa, 1, s, one, buf);
            }
            hsize_t s[6] = {(hsize_t)(rep % 2), (hsize_t)(round % 3), 1, 2, 1, (hsize_t)(rep % 4)};
            read_at(b, sb, 6, s, box, buf);
        }
    }
    H5Sclose(sa);
    H5Sclose(sb);
    H5Dclose(a);
    H5Dclose(b);
    H5Fclose(file);
    return 0;
}
