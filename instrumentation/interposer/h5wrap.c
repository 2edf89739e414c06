/* ioadvisor's link-time wrapper: the libhdf5 interposer (h5interpose.c) linked into a program whose libhdf5
 * is linked statically (Debian's h5cc, most HPC builds), where LD_PRELOAD reaches nothing.
 *
 * Linked with `-Wl,--wrap=H5Dread ... ioadvisor_wrap.o` (`ioadvisor link-flags` prints the line): the
 * linker sends the program's calls of each wrapped function to __wrap_<name> here and this code reaches the
 * real one as __real_<name>; the functions it only asks (H5Iget_name, ...) are the program's own libhdf5's.
 * It records exactly as the interposer does, into the same files (IOADVISOR_H5_DIR/h5-PID.meta and .acc,
 * which `ioadvisor run` sets), so a run reads them alike; without IOADVISOR_H5_DIR it records nothing and
 * each wrapped call costs a test and an indirect call.
 *
 * Linked against a shared libhdf5 instead (h5cc -shlib), the preloaded interposer sees the same calls (they
 * leave the program through its PLT): this copy then stays silent, so that each call is recorded once.
 */
#ifndef IOADV_VOL /* h5vol.c includes this file for the same bindings */
#define IOADV_WRAP 1
#define REAL(name) __real_##name
#define DATASET_LEVEL(name) name
#else /* the process's own functions; what is asked of a dataset, in terms of the connector's objects */
#define REAL(name) name
#define DATASET_LEVEL(name) ioadv_vol_##name
#endif
#include "h5interpose.c"

#include <link.h>

/* A string that tells `ioadvisor run` (instrumentation/linkage.py) this program carries the wrapper, also
 * when its symbol table was stripped. */
__attribute__((used)) static const char wrap_marker[] = "ioadvisor link-time wrapper v1";

#define WEAK __attribute__((weak))
#define DECLARE(field, sym) extern __typeof__(*((struct h5lib *)0)->field) sym;
#define DECLARE_WEAK(field, sym) extern __typeof__(*((struct h5lib *)0)->field) sym WEAK;

/* The wrapped functions, reached through --wrap (the hooks above follow each of them). Weak: those not in
 * every HDF5 >= 1.10 (the _multi calls of 1.14, the selection calls of 1.10.7): null where absent. */
DECLARE(Dread, REAL(H5Dread))
DECLARE(Dwrite, REAL(H5Dwrite))
DECLARE_WEAK(Dread_multi, REAL(H5Dread_multi))
DECLARE_WEAK(Dwrite_multi, REAL(H5Dwrite_multi))
DECLARE(Dcreate2, REAL(H5Dcreate2))
DECLARE(Dset_extent, REAL(H5Dset_extent))
DECLARE(Sselect_hyperslab, REAL(H5Sselect_hyperslab))
DECLARE(Sselect_all, REAL(H5Sselect_all))
DECLARE(Sselect_none, REAL(H5Sselect_none))
DECLARE(Sselect_elements, REAL(H5Sselect_elements))
DECLARE_WEAK(Sselect_adjust, REAL(H5Sselect_adjust))
DECLARE_WEAK(Sselect_copy, REAL(H5Sselect_copy))
DECLARE_WEAK(Smodify_select, REAL(H5Smodify_select))
DECLARE(Soffset_simple, REAL(H5Soffset_simple))
DECLARE(Sset_extent_simple, REAL(H5Sset_extent_simple))
DECLARE(Sset_extent_none, REAL(H5Sset_extent_none))
DECLARE(Sextent_copy, REAL(H5Sextent_copy))
DECLARE(Sclose, REAL(H5Sclose))
DECLARE_WEAK(Dclose, REAL(H5Dclose)) /* weak: a program linked without its --wrap still links */
DECLARE(Idec_ref, REAL(H5Idec_ref))
DECLARE(close, REAL(H5close))
DECLARE(Iclear_type, REAL(H5Iclear_type))
DECLARE(Idestroy_type, REAL(H5Idestroy_type))

/* The functions only asked, called directly. Weak: those of later versions or of parallel builds only. */
DECLARE_WEAK(Dget_num_chunks, H5Dget_num_chunks)
DECLARE_WEAK(Dchunk_iter, H5Dchunk_iter)
DECLARE(Iget_name, DATASET_LEVEL(H5Iget_name))
DECLARE(Fget_name, DATASET_LEVEL(H5Fget_name))
DECLARE(Iget_file_id, DATASET_LEVEL(H5Iget_file_id))
DECLARE(Fget_intent, DATASET_LEVEL(H5Fget_intent))
DECLARE(Fclose, DATASET_LEVEL(H5Fclose))
DECLARE(Fget_access_plist, DATASET_LEVEL(H5Fget_access_plist))
DECLARE(Pget_driver, H5Pget_driver)
DECLARE_WEAK(FD_mpio_init, H5FD_mpio_init)
DECLARE(Dget_space, DATASET_LEVEL(H5Dget_space))
DECLARE(Dget_type, DATASET_LEVEL(H5Dget_type))
DECLARE(Dget_create_plist, DATASET_LEVEL(H5Dget_create_plist))
DECLARE(Dget_access_plist, DATASET_LEVEL(H5Dget_access_plist))
DECLARE(Sget_simple_extent_ndims, H5Sget_simple_extent_ndims)
DECLARE(Tclose, H5Tclose)
DECLARE(Pclose, H5Pclose)
DECLARE(Sget_simple_extent_dims, H5Sget_simple_extent_dims)
DECLARE(Sget_select_type, H5Sget_select_type)
DECLARE(Sget_select_npoints, H5Sget_select_npoints)
DECLARE(Sis_regular_hyperslab, H5Sis_regular_hyperslab)
DECLARE(Sget_regular_hyperslab, H5Sget_regular_hyperslab)
DECLARE(Sget_select_hyper_nblocks, H5Sget_select_hyper_nblocks)
DECLARE(Sget_select_hyper_blocklist, H5Sget_select_hyper_blocklist)
DECLARE(Sget_select_elem_npoints, H5Sget_select_elem_npoints)
DECLARE(Sget_select_elem_pointlist, H5Sget_select_elem_pointlist)
DECLARE(Tget_size, H5Tget_size)
DECLARE(Tget_class, H5Tget_class)
DECLARE(Tget_order, H5Tget_order)
DECLARE(Tget_sign, H5Tget_sign)
DECLARE(Tis_variable_str, H5Tis_variable_str)
DECLARE(Pget_layout, H5Pget_layout)
DECLARE(Pget_chunk, H5Pget_chunk)
DECLARE(Pget_nfilters, H5Pget_nfilters)
DECLARE(Pget_filter2, H5Pget_filter2)
DECLARE(Pget_chunk_cache, H5Pget_chunk_cache)
DECLARE(Pget_fill_value, H5Pget_fill_value)
DECLARE(Eget_auto2, H5Eget_auto2)
DECLARE(Eset_auto2, H5Eset_auto2)
DECLARE(get_libversion, H5get_libversion)

static void bind_linked(struct h5lib *lib) {
    lib->Dread = REAL(H5Dread);
    lib->Dwrite = REAL(H5Dwrite);
    lib->Dread_multi = REAL(H5Dread_multi);
    lib->Dwrite_multi = REAL(H5Dwrite_multi);
    lib->Dcreate2 = REAL(H5Dcreate2);
    lib->Dset_extent = REAL(H5Dset_extent);
    lib->Sselect_hyperslab = REAL(H5Sselect_hyperslab);
    lib->Sselect_all = REAL(H5Sselect_all);
    lib->Sselect_none = REAL(H5Sselect_none);
    lib->Sselect_elements = REAL(H5Sselect_elements);
    lib->Sselect_adjust = REAL(H5Sselect_adjust);
    lib->Sselect_copy = REAL(H5Sselect_copy);
    lib->Smodify_select = REAL(H5Smodify_select);
    lib->Soffset_simple = REAL(H5Soffset_simple);
    lib->Sset_extent_simple = REAL(H5Sset_extent_simple);
    lib->Sset_extent_none = REAL(H5Sset_extent_none);
    lib->Sextent_copy = REAL(H5Sextent_copy);
    lib->Sclose = REAL(H5Sclose);
    lib->Dclose = REAL(H5Dclose);
    lib->Idec_ref = REAL(H5Idec_ref);
    lib->close = REAL(H5close);
    lib->Iclear_type = REAL(H5Iclear_type);
    lib->Idestroy_type = REAL(H5Idestroy_type);
#ifndef IOADV_VOL /* a connector's dataset has no id to ask these of: no chunk offsets */
    lib->Dget_num_chunks = H5Dget_num_chunks;
    lib->Dchunk_iter = H5Dchunk_iter;
#endif
    lib->Iget_name = DATASET_LEVEL(H5Iget_name);
    lib->Fget_name = DATASET_LEVEL(H5Fget_name);
    lib->Iget_file_id = DATASET_LEVEL(H5Iget_file_id);
    lib->Fget_intent = DATASET_LEVEL(H5Fget_intent);
    lib->Fclose = DATASET_LEVEL(H5Fclose);
    lib->Fget_access_plist = DATASET_LEVEL(H5Fget_access_plist);
    lib->Pget_driver = H5Pget_driver;
    lib->FD_mpio_init = H5FD_mpio_init;
    lib->Dget_space = DATASET_LEVEL(H5Dget_space);
    lib->Dget_type = DATASET_LEVEL(H5Dget_type);
    lib->Dget_create_plist = DATASET_LEVEL(H5Dget_create_plist);
    lib->Dget_access_plist = DATASET_LEVEL(H5Dget_access_plist);
    lib->Sget_simple_extent_ndims = H5Sget_simple_extent_ndims;
    lib->Tclose = H5Tclose;
    lib->Pclose = H5Pclose;
    lib->Sget_simple_extent_dims = H5Sget_simple_extent_dims;
    lib->Sget_select_type = H5Sget_select_type;
    lib->Sget_select_npoints = H5Sget_select_npoints;
    lib->Sis_regular_hyperslab = H5Sis_regular_hyperslab;
    lib->Sget_regular_hyperslab = H5Sget_regular_hyperslab;
    lib->Sget_select_hyper_nblocks = H5Sget_select_hyper_nblocks;
    lib->Sget_select_hyper_blocklist = H5Sget_select_hyper_blocklist;
    lib->Sget_select_elem_npoints = H5Sget_select_elem_npoints;
    lib->Sget_select_elem_pointlist = H5Sget_select_elem_pointlist;
    lib->Tget_size = H5Tget_size;
    lib->Tget_class = H5Tget_class;
    lib->Tget_order = H5Tget_order;
    lib->Tget_sign = H5Tget_sign;
    lib->Tis_variable_str = H5Tis_variable_str;
    lib->Pget_layout = H5Pget_layout;
    lib->Pget_chunk = H5Pget_chunk;
    lib->Pget_nfilters = H5Pget_nfilters;
    lib->Pget_filter2 = H5Pget_filter2;
    lib->Pget_chunk_cache = H5Pget_chunk_cache;
    lib->Pget_fill_value = H5Pget_fill_value;
    lib->Eget_auto2 = H5Eget_auto2;
    lib->Eset_auto2 = H5Eset_auto2;
    lib->get_libversion = H5get_libversion;
}

static const char *linked_file(void) {
    static char exe[4096];
    if (!exe[0]) {
        ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
        exe[n > 0 ? n : 0] = 0;
    }
    return exe;
}

/* The one libhdf5 and caller of this program, bound on its first hooked call. */
static struct caller *linked_caller(void) {
    LOCK();
    if (!n_callers) {
        struct h5lib *lib = &libs[0];
        memset(lib, 0, sizeof *lib);
        bind_linked(lib);
        unsigned maj = 0, min = 0, rel = 0;
        lib->get_libversion(&maj, &min, &rel);
        if (maj * 100 + min < 114) lib->Dchunk_iter = NULL; /* its callback's signature settled in 1.14 */
        n_libs = 1;
        callers[0].base = NULL;
        callers[0].lib = lib;
        callers[0].index = 0;
        if (recording) {
            meta_printf("{\"t\":\"lib\",\"i\":0,\"file\":");
            meta_string(linked_file());
            meta_printf(",\"version\":\"%u.%u.%u\",\"recorded\":true" LIB_LINKED "}\n", maj, min, rel);
            meta_printf("{\"t\":\"caller\",\"i\":0,\"lib\":0,\"file\":");
            meta_string(linked_file());
            meta_printf("}\n");
        }
        __atomic_store_n(&n_callers, 1, __ATOMIC_RELEASE);
    }
    UNLOCK();
    return &callers[0];
}

static int shared_libhdf5(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    (void)data;
    const char *slash = info->dlpi_name ? strrchr(info->dlpi_name, '/') : NULL;
    const char *base = slash ? slash + 1 : info->dlpi_name;
    return base && !strncmp(base, "libhdf5", 7) && strstr(base, ".so") && strncmp(base, "libhdf5_hl", 10) &&
           strncmp(base, "libhdf5_cpp", 11) && strncmp(base, "libhdf5_fortran", 15);
}

/* The interposer is preloaded (ioadvisor run) and this program's libhdf5 is a shared one: the interposer
 * records its calls, this copy must not. */
static int interposer_serves(void) {
    return dlsym(RTLD_DEFAULT, "ioadv_set_dir") != NULL && dl_iterate_phdr(shared_libhdf5, NULL) != 0;
}
