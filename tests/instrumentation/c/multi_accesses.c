/* H5Dwrite_multi and H5Dread_multi (HDF5 >= 1.14) over two datasets; prints each dataset's transfer as a
 * JSON line, the ground truth for the trace. Debian 12's HDF5 (1.10) has neither function, so this is
 * built against h5py's bundled libhdf5, with the few declarations it needs instead of HDF5's headers.
 *
 *   multi_accesses FILE
 */
#include <stdint.h>
#include <stdio.h>

typedef int64_t hid_t;
typedef int herr_t;
typedef unsigned long long hsize_t;
#define H5F_ACC_TRUNC 2u
#define H5P_DEFAULT ((hid_t)0)
#define H5S_SELECT_SET 0
extern hid_t H5T_NATIVE_DOUBLE_g;
herr_t H5open(void);
hid_t H5Fcreate(const char *, unsigned, hid_t, hid_t);
herr_t H5Fclose(hid_t);
hid_t H5Screate_simple(int, const hsize_t *, const hsize_t *);
herr_t H5Sselect_hyperslab(hid_t, int, const hsize_t *, const hsize_t *, const hsize_t *, const hsize_t *);
herr_t H5Sclose(hid_t);
hid_t H5Dcreate2(hid_t, const char *, hid_t, hid_t, hid_t, hid_t, hid_t);
herr_t H5Dclose(hid_t);
herr_t H5Dwrite_multi(size_t, hid_t *, hid_t *, hid_t *, hid_t *, hid_t, const void **);
herr_t H5Dread_multi(size_t, hid_t *, hid_t *, hid_t *, hid_t *, hid_t, void **);

int main(int argc, char **argv) {
    if (argc != 2) return 2;
    H5open();
    hid_t f = H5Fcreate(argv[1], H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    hsize_t da[2] = {20, 10}, db[1] = {30};
    hid_t sa = H5Screate_simple(2, da, NULL), sb = H5Screate_simple(1, db, NULL);
    hid_t dset[2] = {H5Dcreate2(f, "a", H5T_NATIVE_DOUBLE_g, sa, 0, 0, 0),
                     H5Dcreate2(f, "b", H5T_NATIVE_DOUBLE_g, sb, 0, 0, 0)};
    static double a[20][10], b[30];
    hid_t types[2] = {H5T_NATIVE_DOUBLE_g, H5T_NATIVE_DOUBLE_g};
    hid_t all[2] = {0, 0};
    const void *wbuf[2] = {a, b};
    if (H5Dwrite_multi(2, dset, types, all, all, H5P_DEFAULT, wbuf) < 0) return 1;
    printf("{\"op\": \"write\", \"path\": \"/a\", \"start\": [0, 0], \"count\": [20, 10]}\n");
    printf("{\"op\": \"write\", \"path\": \"/b\", \"start\": [0], \"count\": [30]}\n");

    hsize_t sta[2] = {2, 1}, cna[2] = {3, 4}, stb[1] = {5}, cnb[1] = {10};
    H5Sselect_hyperslab(sa, H5S_SELECT_SET, sta, NULL, cna, NULL);
    H5Sselect_hyperslab(sb, H5S_SELECT_SET, stb, NULL, cnb, NULL);
    hid_t ma = H5Screate_simple(2, cna, NULL), mb = H5Screate_simple(1, cnb, NULL);
    hid_t mem[2] = {ma, mb}, file[2] = {sa, sb};
    static double ra[3][4], rb[10];
    void *rbuf[2] = {ra, rb};
    if (H5Dread_multi(2, dset, types, mem, file, H5P_DEFAULT, rbuf) < 0) return 1;
    printf("{\"op\": \"read\", \"path\": \"/a\", \"start\": [2, 1], \"count\": [3, 4]}\n");
    printf("{\"op\": \"read\", \"path\": \"/b\", \"start\": [5], \"count\": [10]}\n");
    H5Sclose(ma);
    H5Sclose(mb);
    H5Sclose(sa);
    H5Sclose(sb);
    H5Dclose(dset[0]);
    H5Dclose(dset[1]);
    return H5Fclose(f) < 0;
}
