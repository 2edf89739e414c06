/* The C side of benchmarks/speed/tracing_overhead.py: times its own H5Dread loop, prints its wall and CPU seconds.
 *   h5loop FILE make ROWS          build FILE: a (ROWS x 64) float32 dataset /x, chunks (65536, 8)
 *   h5loop FILE tiny N             N reads of one element (the interposer's cost per call shows)
 *   h5loop FILE boxes N            N reads of 1000x8 boxes, random rows, columns a multiple of 8
 */
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(clockid_t clock) {
    struct timespec ts;
    clock_gettime(clock, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    if (argc < 4) return 2;
    const char *path = argv[1], *mode = argv[2];
    long n = atol(argv[3]);
    if (!strcmp(mode, "make")) {
        hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
        hsize_t dims[2] = {(hsize_t)n, 64}, chunk[2] = {65536, 8}, block[2] = {65536, 64};
        if ((hsize_t)n < chunk[0]) chunk[0] = block[0] = (hsize_t)n;
        hid_t space = H5Screate_simple(2, dims, NULL), dcpl = H5Pcreate(H5P_DATASET_CREATE);
        H5Pset_chunk(dcpl, 2, chunk);
        hid_t d = H5Dcreate2(f, "/x", H5T_NATIVE_FLOAT, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
        float *buf = malloc(sizeof(float) * block[0] * 64);
        srand(0);
        for (hsize_t r = 0; r < dims[0]; r += block[0]) {
            hsize_t start[2] = {r, 0}, cnt[2] = {block[0], 64};
            if (r + cnt[0] > dims[0]) cnt[0] = dims[0] - r;
            for (hsize_t i = 0; i < cnt[0] * 64; i++) buf[i] = (float)rand() / RAND_MAX;
            hid_t fs = H5Dget_space(d), ms = H5Screate_simple(2, cnt, NULL);
            H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, cnt, NULL);
            H5Dwrite(d, H5T_NATIVE_FLOAT, ms, fs, H5P_DEFAULT, buf);
            H5Sclose(ms);
            H5Sclose(fs);
        }
        free(buf);
        H5Dclose(d);
        H5Pclose(dcpl);
        H5Sclose(space);
        H5Fclose(f);
        return 0;
    }
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    hid_t d = H5Dopen2(f, "/x", H5P_DEFAULT);
    hid_t fs = H5Dget_space(d);
    hsize_t dims[2];
    H5Sget_simple_extent_dims(fs, dims, NULL);
    int tiny = !strcmp(mode, "tiny");
    hsize_t box[2] = {tiny ? 1 : 1000, tiny ? 1 : 8};
    hid_t ms = H5Screate_simple(2, box, NULL);
    static float buf[1000 * 8];
    long *rows = malloc(sizeof(long) * n), *cols = malloc(sizeof(long) * n);
    srand(1);
    for (long i = 0; i < n; i++) {
        rows[i] = tiny ? i % 100 : rand() % (long)(dims[0] - 1000);
        cols[i] = tiny ? 0 : (rand() % 8) * 8;
    }
    /* warm the page cache and the chunk cache */
    for (long i = 0; i < (n < 100 ? n : 100); i++) {
        hsize_t start[2] = {(hsize_t)rows[i], (hsize_t)cols[i]};
        H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, box, NULL);
        H5Dread(d, H5T_NATIVE_FLOAT, ms, fs, H5P_DEFAULT, buf);
    }
    double t0 = now(CLOCK_MONOTONIC), c0 = now(CLOCK_PROCESS_CPUTIME_ID);
    for (long i = 0; i < n; i++) {
        hsize_t start[2] = {(hsize_t)rows[i], (hsize_t)cols[i]};
        H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, box, NULL);
        H5Dread(d, H5T_NATIVE_FLOAT, ms, fs, H5P_DEFAULT, buf);
    }
    double c1 = now(CLOCK_PROCESS_CPUTIME_ID), t1 = now(CLOCK_MONOTONIC);
    printf("%.9f %.9f\n", t1 - t0, c1 - c0); /* wall, cpu (the whole process: every thread) */
    H5Sclose(ms);
    H5Sclose(fs);
    H5Dclose(d);
    H5Fclose(f);
    free(rows);
    free(cols);
    return 0;
}
