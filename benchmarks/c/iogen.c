/* A small I/O program of many shapes, for benchmarks/speed/triage_archive.py: each run under darshan-runtime leaves
 * one log, and varying the arguments varies what the log shows (request sizes, order, interface, files).
 *
 *   iogen DIR PATTERN SEED COUNT SIZE FILES
 *
 * PATTERN: seqwrite (COUNT writes of SIZE bytes, then one sequential read back), randread (write COUNT*SIZE,
 * then COUNT reads of SIZE at random offsets), stdio (fwrite/fread of SIZE, COUNT times), meta (FILES files
 * opened, stat'ed and closed COUNT times each), h5rows (HDF5: a chunked (COUNT x SIZE/4) float dataset written
 * row by row, then COUNT single-element reads at random rows), h5block (HDF5: one contiguous dataset written in
 * one call, read back in COUNT hyperslabs). FILES files are used in turn (posix patterns). The fixes
 * benchmarks/triage_confirm.py applies: IOGEN_ALIGN=BYTES sets H5Pset_alignment, IOGEN_CACHE=BYTES the
 * dataset's chunk cache (H5Pset_chunk_cache). IOGEN_COLD=1 empties the file's page cache (fsync,
 * POSIX_FADV_DONTNEED) before the read back (posix and HDF5 patterns), as on a node that did not write it. Built with
 * `h5cc -shlib` so darshan-runtime's HDF5 module sees the HDF5 calls.
 */
#include <fcntl.h>
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* IOGEN_COLD=1: the file's pages out of the page cache before it is read back */
static void cold(int fd) {
    if (fd >= 0 && getenv("IOGEN_COLD")) {
        fsync(fd);
        posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    }
}

static void posix(const char *dir, const char *pattern, long count, long size, int files) {
    char path[4096];
    char *buf = calloc(1, size > 0 ? size : 1);
    for (int f = 0; f < files; f++) {
        snprintf(path, sizeof path, "%s/data%d.bin", dir, f);
        int fd = open(path, O_CREAT | O_RDWR | O_TRUNC, 0600);
        if (fd < 0) { perror(path); exit(1); }
        long n = count / files + (f < count % files);
        for (long i = 0; i < n; i++) {
            buf[0] = (char)i;
            if (write(fd, buf, size) != size) { perror("write"); exit(1); }
        }
        cold(fd);
        if (!strcmp(pattern, "randread")) {
            for (long i = 0; i < n; i++)
                if (pread(fd, buf, size, (rand() % (n > 0 ? n : 1)) * size + (rand() % 7)) < 0) exit(1);
        } else {
            lseek(fd, 0, SEEK_SET);
            for (long i = 0; i < n; i++)
                if (read(fd, buf, size) < 0) exit(1);
        }
        close(fd);
        unlink(path);
    }
    free(buf);
}

static void stdio_io(const char *dir, long count, long size) {
    char path[4096];
    snprintf(path, sizeof path, "%s/out.txt", dir);
    FILE *fh = fopen(path, "w+");
    char *buf = calloc(1, size);
    for (long i = 0; i < count; i++) fwrite(buf, 1, size, fh);
    rewind(fh);
    for (long i = 0; i < count; i++)
        if (fread(buf, 1, size, fh) != (size_t)size) break;
    fclose(fh);
    unlink(path);
    free(buf);
}

static void meta(const char *dir, long count, int files) {
    char path[4096];
    struct stat st;
    for (int f = 0; f < files; f++) {
        snprintf(path, sizeof path, "%s/m%d", dir, f);
        close(open(path, O_CREAT | O_WRONLY, 0600));
    }
    for (long i = 0; i < count; i++)
        for (int f = 0; f < files; f++) {
            snprintf(path, sizeof path, "%s/m%d", dir, f);
            int fd = open(path, O_RDONLY);
            fstat(fd, &st);
            lseek(fd, 0, SEEK_END);
            close(fd);
        }
    for (int f = 0; f < files; f++) {
        snprintf(path, sizeof path, "%s/m%d", dir, f);
        unlink(path);
    }
}

static void hdf5(const char *dir, const char *pattern, long count, long size) {
    char path[4096];
    snprintf(path, sizeof path, "%s/data.h5", dir);
    hsize_t cols = size / 4 > 0 ? size / 4 : 1, dims[2] = {(hsize_t)count, cols};
    /* IOGEN_ALIGN=BYTES: objects on BYTES boundaries (H5Pset_alignment), the fix of misaligned requests */
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    if (getenv("IOGEN_ALIGN")) H5Pset_alignment(fapl, 1, (hsize_t)atol(getenv("IOGEN_ALIGN")));
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    hid_t space = H5Screate_simple(2, dims, NULL), dcpl = H5Pcreate(H5P_DATASET_CREATE);
    int rows = !strcmp(pattern, "h5rows");
    if (rows) {
        hsize_t chunk[2] = {count < 64 ? (hsize_t)count : 64, cols};
        H5Pset_chunk(dcpl, 2, chunk);
    }
    /* IOGEN_CACHE=BYTES: the dataset's chunk cache (the fix of chunks re-read piecewise, P05 on HDF5 files) */
    hid_t dapl = H5Pcreate(H5P_DATASET_ACCESS);
    if (getenv("IOGEN_CACHE")) H5Pset_chunk_cache(dapl, 12421, (size_t)atol(getenv("IOGEN_CACHE")), 0.75);
    hid_t d = H5Dcreate2(f, "/x", H5T_NATIVE_FLOAT, space, H5P_DEFAULT, dcpl, dapl);
    float *buf = calloc(count * cols, sizeof(float));
    if (rows) {
        hsize_t one[2] = {1, cols};
        hid_t ms = H5Screate_simple(2, one, NULL);
        for (long i = 0; i < count; i++) {
            hsize_t start[2] = {(hsize_t)i, 0};
            H5Sselect_hyperslab(space, H5S_SELECT_SET, start, NULL, one, NULL);
            H5Dwrite(d, H5T_NATIVE_FLOAT, ms, space, H5P_DEFAULT, buf);
        }
        H5Sclose(ms);
    } else {
        H5Dwrite(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf);
    }
    H5Dclose(d);
    H5Fclose(f);
    if (getenv("IOGEN_COLD")) {
        int fd = open(path, O_RDONLY);
        cold(fd);
        if (fd >= 0) close(fd);
    }
    /* read back: a fresh open, as an analysis step would */
    f = H5Fopen(path, H5F_ACC_RDONLY, fapl);
    d = H5Dopen2(f, "/x", dapl);
    hsize_t one[2] = {1, rows ? 1 : cols};
    hid_t ms = H5Screate_simple(2, one, NULL);
    for (long i = 0; i < count; i++) {
        hsize_t start[2] = {(hsize_t)(rand() % count), rows ? (hsize_t)(rand() % cols) : 0};
        H5Sselect_hyperslab(space, H5S_SELECT_SET, start, NULL, one, NULL);
        H5Dread(d, H5T_NATIVE_FLOAT, ms, space, H5P_DEFAULT, buf);
    }
    H5Sclose(ms);
    H5Sclose(space);
    H5Pclose(dcpl);
    H5Pclose(dapl);
    H5Pclose(fapl);
    H5Dclose(d);
    H5Fclose(f);
    unlink(path);
    free(buf);
}

int main(int argc, char **argv) {
    if (argc < 7) {
        fprintf(stderr, "usage: iogen DIR PATTERN SEED COUNT SIZE FILES\n");
        return 2;
    }
    const char *dir = argv[1], *pattern = argv[2];
    srand(atoi(argv[3]));
    long count = atol(argv[4]), size = atol(argv[5]);
    int files = atoi(argv[6]) > 0 ? atoi(argv[6]) : 1;
    if (!strcmp(pattern, "stdio")) stdio_io(dir, count, size);
    else if (!strcmp(pattern, "meta")) meta(dir, count, files);
    else if (!strncmp(pattern, "h5", 2)) hdf5(dir, pattern, count, size);
    else posix(dir, pattern, count, size, files);
    return 0;
}
