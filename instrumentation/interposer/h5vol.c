/* The recording side of ioadvisor's VOL connector (h5vol_connector.c): the interposer's code (h5interpose.c,
 * with the bindings of h5wrap.c) built with IOADV_VOL. The connector calls ioadv_vol_transfer around each
 * dataset read and write it passes down; a dataset is asked about through the connector's shims
 * (ioadv_vol_H5Dget_space, ...: a "dataset id" here is the connector's key for one open dataset), its
 * selections and types through the process's own libhdf5 functions. Same files, same records, as the
 * interposer. No HDF5 headers here (h5interpose.c declares its own types), so this file builds apart from
 * the connector, which needs the headers of the HDF5 version it is loaded into.
 */
#define IOADV_VOL 1
#include "h5wrap.c"

/* One dataset read (op 0) or write (op 1) of `count` datasets: `call(ctx)` moves the data. */
__attribute__((visibility("hidden"))) herr_t ioadv_vol_transfer(int op, size_t count, const hid_t *dsets,
                                                                const hid_t *mem_types, const hid_t *file_spaces,
                                                                herr_t (*call)(void *), void *ctx) {
    struct caller *c = caller_for(NULL);
    if (!recording || !count) return call(ctx);
    struct pending one, *p = count == 1 ? &one : malloc(sizeof *p * count);
    int ok_one, *ok = count == 1 ? &ok_one : malloc(sizeof *ok * count);
    if (!p || !ok) {
        if (p != &one) free(p);
        if (ok != &ok_one) free(ok);
        return call(ctx);
    }
    for (size_t i = 0; i < count; i++) ok[i] = prepare(c, op, dsets[i], mem_types[i], file_spaces[i], &p[i]);
    long long t0 = now_ns();
    herr_t status = call(ctx);
    long long t1 = now_ns();
    for (size_t i = 0; i < count && status >= 0; i++) {
        if (ok[i]) continue;
        p[i].rec.t0 = (double)(t0 + (t1 - t0) * (long long)i / (long long)count) * 1e-9;
        p[i].rec.dt = (double)(t1 - t0) * 1e-9 / (double)count;
        commit(c, &p[i]);
    }
    if (p != &one) free(p);
    if (ok != &ok_one) free(ok);
    return status;
}
