/* ioadvisor's VOL connector (HDF5 >= 1.14): HDF5's own pass-through connector, from the source release of
 * the HDF5 version it is built for (src/H5VLpassthru.c, compiled in here unchanged), with its dataset read
 * and write recorded by the interposer's code (h5vol.c). HDF5 loads it for any program, its libhdf5 shared or
 * linked in statically, through HDF5_VOL_CONNECTOR="ioadvisor under_vol=0;under_info={}" and
 * HDF5_PLUGIN_PATH; in a static program only if the program exports HDF5's functions (linked with
 * -rdynamic): the connector calls them (instrumentation/volconnector.py checks before setting either).
 *
 * Each open dataset gets a key, the "dataset id" the recording side asks about (ioadv_vol_H5Dget_space,
 * ...), answered through the connector below (H5VLdataset_get, H5VLobject_get, H5VLfile_get); a key is
 * never reused, so a dataset opened after another closed is never taken for it.
 */
#include "hdf5.h"
#include "H5VLpassthru.c"

#define IOADV_VOL_VALUE 511 /* in the range HDF5 leaves for connectors not registered with it (256-511) */
#define KEY_SLOTS (1u << 16)

herr_t ioadv_vol_transfer(int op, size_t count, const hid_t *dsets, const hid_t *mem_types, const hid_t *file_spaces,
                          herr_t (*call)(void *), void *ctx) __attribute__((visibility("hidden")));

/* open addressing, pointer -> key; a closed dataset's slot is a tombstone (obj NULL, key kept) */
static struct { void *obj; hid_t key; } keys[KEY_SLOTS];
static hid_t next_key = (hid_t)1 << 40; /* far from HDF5's own ids: never mistaken for one */

static uint32_t slot_of(const void *obj) { return (uint32_t)(((uintptr_t)obj >> 4) * 2654435761u) % KEY_SLOTS; }

static hid_t key_of(void *obj) {
    uint32_t s = slot_of(obj), free_at = KEY_SLOTS;
    for (uint32_t probe = 0; probe < KEY_SLOTS; probe++, s = (s + 1) % KEY_SLOTS) {
        if (keys[s].obj == obj) return keys[s].key;
        if (!keys[s].obj && free_at == KEY_SLOTS) free_at = s;
        if (!keys[s].obj && !keys[s].key) break; /* never used: the pointer is not further on */
    }
    if (free_at == KEY_SLOTS) return -1; /* 65,536 datasets open at once: not recorded */
    keys[free_at].obj = obj;
    keys[free_at].key = next_key++;
    return keys[free_at].key;
}

static void forget(void *obj) {
    uint32_t s = slot_of(obj);
    for (uint32_t probe = 0; probe < KEY_SLOTS; probe++, s = (s + 1) % KEY_SLOTS) {
        if (keys[s].obj == obj) { keys[s].obj = NULL; return; }
        if (!keys[s].obj && !keys[s].key) return;
    }
}

static H5VL_pass_through_t *obj_of(hid_t key) {
    for (uint32_t s = 0; s < KEY_SLOTS; s++) /* asked once per dataset (its description), not per access */
        if (keys[s].obj && keys[s].key == key) return keys[s].obj;
    return NULL;
}

/* ---- what the recording side asks of a dataset ---- */

static hid_t dataset_get(hid_t key, H5VL_dataset_get_t what) {
    H5VL_pass_through_t *o = obj_of(key);
    H5VL_dataset_get_args_t a;
    memset(&a, 0, sizeof a);
    a.op_type = what;
    if (!o || H5VLdataset_get(o->under_object, o->under_vol_id, &a, H5P_DATASET_XFER_DEFAULT, NULL) < 0) return -1;
    switch (what) {
        case H5VL_DATASET_GET_SPACE: return a.args.get_space.space_id;
        case H5VL_DATASET_GET_TYPE: return a.args.get_type.type_id;
        case H5VL_DATASET_GET_DCPL: return a.args.get_dcpl.dcpl_id;
        case H5VL_DATASET_GET_DAPL: return a.args.get_dapl.dapl_id;
        default: return -1;
    }
}

#define SHIM __attribute__((visibility("hidden")))
SHIM hid_t ioadv_vol_H5Dget_space(hid_t key) { return dataset_get(key, H5VL_DATASET_GET_SPACE); }
SHIM hid_t ioadv_vol_H5Dget_type(hid_t key) { return dataset_get(key, H5VL_DATASET_GET_TYPE); }
SHIM hid_t ioadv_vol_H5Dget_create_plist(hid_t key) { return dataset_get(key, H5VL_DATASET_GET_DCPL); }
SHIM hid_t ioadv_vol_H5Dget_access_plist(hid_t key) { return dataset_get(key, H5VL_DATASET_GET_DAPL); }

SHIM ssize_t ioadv_vol_H5Iget_name(hid_t key, char *buf, size_t size) {
    H5VL_pass_through_t *o = obj_of(key);
    H5VL_loc_params_t loc;
    H5VL_object_get_args_t a;
    size_t len = 0;
    memset(&loc, 0, sizeof loc);
    loc.obj_type = H5I_DATASET;
    loc.type = H5VL_OBJECT_BY_SELF;
    a.op_type = H5VL_OBJECT_GET_NAME;
    a.args.get_name.buf_size = size;
    a.args.get_name.buf = buf;
    a.args.get_name.name_len = &len;
    if (!o || H5VLobject_get(o->under_object, &loc, o->under_vol_id, &a, H5P_DATASET_XFER_DEFAULT, NULL) < 0)
        return -1;
    return (ssize_t)len;
}

SHIM ssize_t ioadv_vol_H5Fget_name(hid_t key, char *buf, size_t size) {
    H5VL_pass_through_t *o = obj_of(key);
    H5VL_file_get_args_t a;
    size_t len = 0;
    a.op_type = H5VL_FILE_GET_NAME;
    a.args.get_name.type = H5I_DATASET; /* the file of this dataset */
    a.args.get_name.buf_size = size;
    a.args.get_name.buf = buf;
    a.args.get_name.file_name_len = &len;
    if (!o || H5VLfile_get(o->under_object, o->under_vol_id, &a, H5P_DATASET_XFER_DEFAULT, NULL) < 0) return -1;
    return (ssize_t)len;
}

/* the dataset's file is asked through the dataset's own key */
SHIM hid_t ioadv_vol_H5Iget_file_id(hid_t key) { return key; }
SHIM herr_t ioadv_vol_H5Fclose(hid_t key) { (void)key; return 0; }
SHIM hid_t ioadv_vol_H5Fget_access_plist(hid_t key) { (void)key; return -1; } /* the driver is not told apart */

SHIM herr_t ioadv_vol_H5Fget_intent(hid_t key, unsigned *intent) {
    H5VL_pass_through_t *o = obj_of(key);
    H5VL_loc_params_t loc;
    H5VL_object_get_args_t a;
    void *file = NULL;
    memset(&loc, 0, sizeof loc);
    loc.obj_type = H5I_DATASET;
    loc.type = H5VL_OBJECT_BY_SELF;
    a.op_type = H5VL_OBJECT_GET_FILE;
    a.args.get_file.file = &file;
    if (!o || H5VLobject_get(o->under_object, &loc, o->under_vol_id, &a, H5P_DATASET_XFER_DEFAULT, NULL) < 0 || !file)
        return -1;
    H5VL_file_get_args_t f;
    f.op_type = H5VL_FILE_GET_INTENT;
    f.args.get_intent.flags = intent;
    return H5VLfile_get(file, o->under_vol_id, &f, H5P_DATASET_XFER_DEFAULT, NULL);
}

/* ---- the connector: the pass-through's, with its dataset read, write and close recorded ---- */

struct transfer {
    int write;
    size_t count;
    void **dset;
    hid_t *mem_type, *mem_space, *file_space, plist;
    void **buf;
    void **req;
};

static herr_t pass_down(void *p) {
    struct transfer *t = p;
    return t->write ? H5VL_pass_through_dataset_write(t->count, t->dset, t->mem_type, t->mem_space, t->file_space,
                                                      t->plist, (const void **)t->buf, t->req)
                    : H5VL_pass_through_dataset_read(t->count, t->dset, t->mem_type, t->mem_space, t->file_space,
                                                     t->plist, t->buf, t->req);
}

static herr_t transfer(struct transfer *t) {
    hid_t one, *dkeys = t->count == 1 ? &one : malloc(sizeof(hid_t) * t->count);
    if (!dkeys) return pass_down(t);
    int known = 1;
    for (size_t i = 0; i < t->count; i++) known &= (dkeys[i] = key_of(t->dset[i])) >= 0;
    herr_t status = known ? ioadv_vol_transfer(t->write, t->count, dkeys, t->mem_type, t->file_space, pass_down, t)
                          : pass_down(t);
    if (dkeys != &one) free(dkeys);
    return status;
}

static herr_t ioadv_dataset_read(size_t count, void *dset[], hid_t mem_type_id[], hid_t mem_space_id[],
                                 hid_t file_space_id[], hid_t plist_id, void *buf[], void **req) {
    struct transfer t = {0, count, dset, mem_type_id, mem_space_id, file_space_id, plist_id, buf, req};
    return transfer(&t);
}

static herr_t ioadv_dataset_write(size_t count, void *dset[], hid_t mem_type_id[], hid_t mem_space_id[],
                                  hid_t file_space_id[], hid_t plist_id, const void *buf[], void **req) {
    struct transfer t = {1, count, dset, mem_type_id, mem_space_id, file_space_id, plist_id, (void **)buf, req};
    return transfer(&t);
}

static herr_t ioadv_dataset_close(void *dset, hid_t dxpl_id, void **req) {
    forget(dset);
    return H5VL_pass_through_dataset_close(dset, dxpl_id, req);
}

static H5VL_class_t ioadv_class;

__attribute__((visibility("default"))) H5PL_type_t H5PLget_plugin_type(void) { return H5PL_TYPE_VOL; }

__attribute__((visibility("default"))) const void *H5PLget_plugin_info(void) {
    ioadv_class = H5VL_pass_through_g;
    ioadv_class.value = (H5VL_class_value_t)IOADV_VOL_VALUE;
    ioadv_class.name = "ioadvisor";
    ioadv_class.dataset_cls.read = ioadv_dataset_read;
    ioadv_class.dataset_cls.write = ioadv_dataset_write;
    ioadv_class.dataset_cls.close = ioadv_dataset_close;
    return &ioadv_class;
}
