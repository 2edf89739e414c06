/* A known HDF5 program: every dataset's shape, chunks, element size and accesses are stated here.
 * test_darshan.py::test_log_of_the_known_c_program checks what `ioadvisor import darshan` makes of the Darshan log
 * of a run of it (darshan-runtime built with --enable-hdf5-mod; set IOADVISOR_DARSHAN_KNOWN_LOG to the log):
 *   gcc -o known darshan_known.c $(pkg-config --cflags --libs hdf5)
 *   DARSHAN_ENABLE_NONMPI=1 LD_PRELOAD=.../libdarshan.so ./known /tmp/known.h5   */
#include <hdf5.h>
#include <stdlib.h>
#include <string.h>

static void box(hid_t space, int n, const hsize_t *start, const hsize_t *stride, const hsize_t *count, const hsize_t *block) {
    H5Sselect_hyperslab(space, H5S_SELECT_SET, start, stride, count, block);
}

int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : "known.h5";
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    float *buf = calloc(100 * 60, sizeof(double) * 4);

    /* /grid: (100, 60) float32, chunks (25, 20); 10 writes of 10 rows, 4 reads of 25 rows */
    hsize_t gdims[2] = {100, 60}, gchunk[2] = {25, 20};
    hid_t gspace = H5Screate_simple(2, gdims, NULL);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(dcpl, 2, gchunk);
    hid_t g = H5Dcreate2(f, "/grid", H5T_NATIVE_FLOAT, gspace, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    for (int i = 0; i < 10; i++) {
        hsize_t start[2] = {10 * i, 0}, count[2] = {10, 60};
        hsize_t mdims[2] = {10, 60};
        hid_t mem = H5Screate_simple(2, mdims, NULL);
        box(gspace, 2, start, NULL, count, NULL);
        H5Dwrite(g, H5T_NATIVE_FLOAT, mem, gspace, H5P_DEFAULT, buf);
        H5Sclose(mem);
    }
    for (int i = 0; i < 4; i++) {
        hsize_t start[2] = {25 * i, 0}, count[2] = {1, 1}, block[2] = {25, 60};
        hsize_t mdims[2] = {25, 60};
        hid_t mem = H5Screate_simple(2, mdims, NULL);
        box(gspace, 2, start, NULL, count, block);
        H5Dread(g, H5T_NATIVE_FLOAT, mem, gspace, H5P_DEFAULT, buf);
        H5Sclose(mem);
    }
    H5Dclose(g); H5Pclose(dcpl); H5Sclose(gspace);

    /* /cube: (8, 30, 40) float64, chunks (2, 10, 40); 8 plane writes (1, 30, 40), 5 column reads (8, 30, 1) */
    hsize_t cdims[3] = {8, 30, 40}, cchunk[3] = {2, 10, 40};
    hid_t cspace = H5Screate_simple(3, cdims, NULL);
    dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(dcpl, 3, cchunk);
    hid_t c = H5Dcreate2(f, "/cube", H5T_NATIVE_DOUBLE, cspace, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    for (int t = 0; t < 8; t++) {
        hsize_t start[3] = {t, 0, 0}, count[3] = {1, 30, 40};
        hid_t mem = H5Screate_simple(3, count, NULL);
        box(cspace, 3, start, NULL, count, NULL);
        H5Dwrite(c, H5T_NATIVE_DOUBLE, mem, cspace, H5P_DEFAULT, buf);
        H5Sclose(mem);
    }
    for (int j = 0; j < 5; j++) {
        hsize_t start[3] = {0, 0, j}, count[3] = {8, 30, 1};
        hid_t mem = H5Screate_simple(3, count, NULL);
        box(cspace, 3, start, NULL, count, NULL);
        H5Dread(c, H5T_NATIVE_DOUBLE, mem, cspace, H5P_DEFAULT, buf);
        H5Sclose(mem);
    }
    H5Dclose(c); H5Pclose(dcpl); H5Sclose(cspace);

    /* /line: (4000,) int16 contiguous; one whole write and one whole read (H5S_ALL), 3 reads of every other element */
    hsize_t ldims[1] = {4000};
    hid_t lspace = H5Screate_simple(1, ldims, NULL);
    hid_t l = H5Dcreate2(f, "/line", H5T_NATIVE_SHORT, lspace, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Dwrite(l, H5T_NATIVE_SHORT, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf);
    H5Dread(l, H5T_NATIVE_SHORT, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf);
    for (int k = 0; k < 3; k++) {
        hsize_t start[1] = {1000 * k}, stride[1] = {2}, count[1] = {500};
        hid_t mem = H5Screate_simple(1, count, NULL);
        box(lspace, 1, start, stride, count, NULL);
        H5Dread(l, H5T_NATIVE_SHORT, mem, lspace, H5P_DEFAULT, buf);
        H5Sclose(mem);
    }
    H5Dclose(l); H5Sclose(lspace);

    /* /pts: (50, 50) int32 chunks (10, 10); 6 point reads of 7 points each, written whole once */
    hsize_t pdims[2] = {50, 50}, pchunk[2] = {10, 10};
    hid_t pspace = H5Screate_simple(2, pdims, NULL);
    dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(dcpl, 2, pchunk);
    hid_t p = H5Dcreate2(f, "/pts", H5T_NATIVE_INT, pspace, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    H5Dwrite(p, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf);
    for (int k = 0; k < 6; k++) {
        hsize_t coords[14];
        for (int q = 0; q < 7; q++) { coords[2 * q] = (k * 7 + q) % 50; coords[2 * q + 1] = (q * 13 + k) % 50; }
        hsize_t n[1] = {7};
        hid_t mem = H5Screate_simple(1, n, NULL);
        H5Sselect_elements(pspace, H5S_SELECT_SET, 7, coords);
        H5Dread(p, H5T_NATIVE_INT, mem, pspace, H5P_DEFAULT, buf);
        H5Sclose(mem);
    }
    H5Dclose(p); H5Pclose(dcpl); H5Sclose(pspace);
    H5Fclose(f);
    free(buf);
    return 0;
}
