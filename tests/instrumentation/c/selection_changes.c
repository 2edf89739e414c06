/* Reads through one file dataspace whose selection is changed in every way libhdf5 offers between reads:
 * the interposer knows a selection set with H5S_SELECT_SET without asking libhdf5, and must notice every
 * other change. After each H5Dread it prints the elements libhdf5 says the selection holds (its own
 * block, point or extent lists: the ground truth), one JSON line {"op", "points"} per read. */
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>

#define NX 30
#define NY 20

static double buf[NX * NY];

static void point(int *first, hsize_t i, hsize_t j) {
    printf("%s[%llu,%llu]", *first ? "" : ",", i, j);
    *first = 0;
}

/* H5Dread, then the elements of the selection as libhdf5 itself lists them */
static void read_and_say(hid_t dset, hid_t fs) {
    hssize_t n = H5Sget_select_npoints(fs);
    hid_t ms = H5Screate_simple(1, (hsize_t[]){n > 0 ? (hsize_t)n : 1}, NULL);
    if (n == 0) H5Sselect_none(ms);
    if (H5Dread(dset, H5T_NATIVE_DOUBLE, ms, fs, H5P_DEFAULT, buf) < 0) exit(1);
    H5Sclose(ms);
    int first = 1;
    printf("{\"op\":\"read\",\"points\":[");
    H5S_sel_type type = H5Sget_select_type(fs);
    if (type == H5S_SEL_ALL) {
        for (hsize_t i = 0; i < NX; i++)
            for (hsize_t j = 0; j < NY; j++) point(&first, i, j);
    } else if (type == H5S_SEL_POINTS) {
        hsize_t k = (hsize_t)H5Sget_select_elem_npoints(fs), *p = malloc(sizeof(hsize_t) * 2 * (k + 1));
        H5Sget_select_elem_pointlist(fs, 0, k, p);
        for (hsize_t i = 0; i < k; i++) point(&first, p[2 * i], p[2 * i + 1]);
        free(p);
    } else if (type == H5S_SEL_HYPERSLABS) {
        hsize_t k = (hsize_t)H5Sget_select_hyper_nblocks(fs), *b = malloc(sizeof(hsize_t) * 4 * (k + 1));
        H5Sget_select_hyper_blocklist(fs, 0, k, b);
        for (hsize_t m = 0; m < k; m++)
            for (hsize_t i = b[4 * m]; i <= b[4 * m + 2]; i++)
                for (hsize_t j = b[4 * m + 1]; j <= b[4 * m + 3]; j++) point(&first, i, j);
        free(b);
    }
    printf("]}\n");
}

static void set(hid_t fs, H5S_seloper_t op, hsize_t s0, hsize_t s1, hsize_t st0, hsize_t st1, hsize_t c0,
                hsize_t c1, hsize_t b0, hsize_t b1) {
    hsize_t start[2] = {s0, s1}, stride[2] = {st0, st1}, count[2] = {c0, c1}, block[2] = {b0, b1};
    if (H5Sselect_hyperslab(fs, op, start, stride, count, block) < 0) exit(2);
}

int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : "changes.h5";
    hid_t file = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    hsize_t dims[2] = {NX, NY}, chunk[2] = {10, 5};
    hid_t space = H5Screate_simple(2, dims, NULL), dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(dcpl, 2, chunk);
    hid_t dset = H5Dcreate2(file, "/v", H5T_NATIVE_DOUBLE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    H5Dwrite(dset, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf);
    printf("{\"op\":\"write\",\"points\":\"all\"}\n");
    hid_t fs = H5Dget_space(dset), fs2 = H5Dget_space(dset);

    set(fs, H5S_SELECT_SET, 2, 3, 1, 1, 1, 1, 4, 5);            /* a box */
    read_and_say(dset, fs);
    set(fs, H5S_SELECT_SET, 1, 0, 3, 4, 5, 4, 2, 3);            /* strided blocks, same id */
    read_and_say(dset, fs);
    if (H5Sselect_hyperslab(fs, H5S_SELECT_SET, (hsize_t[]){7, 9}, NULL, (hsize_t[]){3, 2}, NULL) < 0) return 2;
    read_and_say(dset, fs);                                     /* stride and block left to libhdf5 */
    set(fs, H5S_SELECT_OR, 20, 15, 1, 1, 1, 1, 2, 2);           /* a union: no longer regular */
    read_and_say(dset, fs);
    set(fs, H5S_SELECT_SET, 0, 0, 1, 1, 1, 1, 3, 3);
    set(fs, H5S_SELECT_AND, 1, 1, 1, 1, 1, 1, 5, 5);            /* an intersection: regular, not as set */
    read_and_say(dset, fs);
    set(fs, H5S_SELECT_SET, 0, 0, 1, 1, 1, 1, 3, 3);
    H5Sselect_all(fs);
    read_and_say(dset, fs);
    set(fs, H5S_SELECT_SET, 0, 0, 1, 1, 1, 1, 3, 3);
    H5Sselect_none(fs);
    set(fs, H5S_SELECT_OR, 4, 4, 1, 1, 1, 1, 2, 6);             /* none, then OR: this box alone */
    read_and_say(dset, fs);
    set(fs, H5S_SELECT_SET, 0, 0, 1, 1, 1, 1, 3, 3);
    H5Sselect_elements(fs, H5S_SELECT_SET, 3, (hsize_t[]){5, 7, 29, 0, 0, 19});
    read_and_say(dset, fs);
    set(fs, H5S_SELECT_SET, 10, 10, 1, 1, 1, 1, 3, 4);
    H5Sselect_adjust(fs, (hssize_t[]){5, 8});                   /* the selection moved by -offset */
    read_and_say(dset, fs);
    set(fs2, H5S_SELECT_SET, 25, 1, 1, 1, 1, 1, 5, 2);
    set(fs, H5S_SELECT_SET, 0, 0, 1, 1, 1, 1, 3, 3);
    H5Sselect_copy(fs, fs2);                                    /* fs2's selection onto fs */
    read_and_say(dset, fs);
    set(fs, H5S_SELECT_SET, 0, 0, 1, 1, 1, 1, 3, 3);
    set(fs2, H5S_SELECT_SET, 12, 12, 1, 1, 1, 1, 2, 2);
    H5Smodify_select(fs, H5S_SELECT_OR, fs2);
    read_and_say(dset, fs);
    read_and_say(dset, fs2);                                    /* the other id kept its own selection */
    set(fs, H5S_SELECT_SET, 0, 0, 1, 1, 1, 1, 3, 3);
    H5Sset_extent_simple(fs, 2, dims, NULL);                    /* a new extent selects all */
    read_and_say(dset, fs);
    set(fs, H5S_SELECT_SET, 0, 0, 1, 1, 1, 1, 3, 3);
    H5Sextent_copy(fs, space);
    read_and_say(dset, fs);
    set(fs, H5S_SELECT_SET, 6, 6, 1, 1, 1, 1, 2, 2);
    H5Soffset_simple(fs, (hssize_t[]){0, 0});
    read_and_say(dset, fs);
    set(fs, H5S_SELECT_SET, 3, 0, 1, 1, 0, 1, 1, 1);            /* a zero count: nothing selected */
    read_and_say(dset, fs);
    set(fs, H5S_SELECT_SET, 8, 2, 1, 1, 1, 1, 2, 2);
    read_and_say(dset, fs);
    /* a closed id, and new ids made in its place */
    H5Sclose(fs);
    for (int i = 0; i < 3; i++) {
        hid_t s = H5Dget_space(dset);
        if (i == 1) set(s, H5S_SELECT_SET, 1, 2, 1, 1, 1, 1, 3, 3);
        read_and_say(dset, s);
        H5Sclose(s);
    }
    hid_t s = H5Scopy(fs2);                                     /* a copy carries fs2's selection */
    read_and_say(dset, s);
    H5Idec_ref(s);
    H5Sclose(fs2);
    H5Dclose(dset);
    H5Pclose(dcpl);
    H5Sclose(space);
    H5Fclose(file);
    return 0;
}
