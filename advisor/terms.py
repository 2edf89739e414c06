"""Plain words for the cost terms: a leaf module the results, the report and the charts all read."""

TERM_MEANING = {
    "t_call": "per-call library overhead",
    "t_memcpy": "copying between chunk buffers and your arrays",
    "t_rdisk": "reading from the storage device (requests, seeks, bytes)",
    "t_wdisk": "writing to the storage device",
    "t_cache": "copying file data out of the OS page cache",
    "t_chunk": "per-chunk library work (lookup, codec pipeline set-up)",
    "t_zopen": "opening one file per chunk",
    "t_codec": "the filter pipeline",
    "t_alloc": "allocating (and filling) chunk buffers",
    "t_compress": "compressing the chunks written",
    "t_decompress": "decompressing the chunks read",
}
"""Plain-language meaning of each term of the joint cost (iomodel.cost.TERMS + compression)."""

__all__ = ["TERM_MEANING"]
