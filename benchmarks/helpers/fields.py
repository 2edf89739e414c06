"""Named real scientific fields (native float32/float64) for compression benchmarks.

Run ``python -m benchmarks.helpers.fetch_data`` first. ``load_field(name)`` returns a numpy array; missing values
(``_FillValue``/``missing_value`` in netCDF, BMDI in UM PP) are handled explicitly by ``missing``:
``"nan"`` (default) -> NaN, ``"mean"`` -> the mean of the valid values (for codecs that cannot hold NaN),
``"raw"`` -> the stored fill value, untouched.
"""
from __future__ import annotations

import glob
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from benchmarks.helpers.fetch_data import DEFAULT_DEST, debian_root, iris_root


@dataclass(frozen=True)
class FieldSpec:
    """Where one field lives: source package, file (glob for a stack of PP files) and variable."""

    source: str  # "ferret-datasets" | "libncarg-data" | "iris-sample-data"
    path: str
    variable: str = ""  # netCDF variable; empty for UM PP (all records are stacked)


FIELDS: dict[str, FieldSpec] = {
    "etopo5_topography": FieldSpec("ferret-datasets", "etopo5.cdf", "ROSE"),
    "levitus_temperature": FieldSpec("ferret-datasets", "levitus_climatology.cdf", "TEMP"),
    "levitus_salinity": FieldSpec("ferret-datasets", "levitus_climatology.cdf", "SALT"),
    "navy_wind_u": FieldSpec("ferret-datasets", "monthly_navy_winds.cdf", "UWND"),
    "navy_wind_v": FieldSpec("ferret-datasets", "monthly_navy_winds.cdf", "VWND"),
    "ocean_atlas_temperature": FieldSpec("ferret-datasets", "ocean_atlas_subset.nc", "TEMP"),
    "coads_sst": FieldSpec("ferret-datasets", "coads_climatology.cdf", "SST"),
    "coads_sea_level_pressure": FieldSpec("ferret-datasets", "coads_climatology.cdf", "SLP"),
    "trinidad_dem": FieldSpec("libncarg-data", "cdf/trinidad.nc", "data"),
    "sea_ice_fraction": FieldSpec("libncarg-data", "cdf/fice.nc", "fice"),
    "gcm_temperature_3d": FieldSpec("libncarg-data", "nug/rectilinear_grid_3D.nc", "t"),
    "gcm_humidity_3d": FieldSpec("libncarg-data", "nug/rectilinear_grid_3D.nc", "rhumidity"),
    "pop_velocity_u": FieldSpec("libncarg-data", "cdf/pop.nc", "urot"),
    "cosmo_surface_height": FieldSpec("libncarg-data", "nug/HSURF_regional_model_0.11deg.nc", "HSURF"),
    "eurocordex_tas": FieldSpec("libncarg-data", "nug/tas_rotated_grid_EUR11.nc", "tas"),
    "a1b_air_temperature": FieldSpec("iris-sample-data", "A1B_north_america.nc", "air_temperature"),
    "ostia_sst": FieldSpec("iris-sample-data", "ostia_monthly.nc", "surface_temperature"),
    "hybrid_height_theta": FieldSpec("iris-sample-data", "hybrid_height.nc", "air_potential_temperature"),
    "nemo_sst": FieldSpec("iris-sample-data", "NEMO/nemo_1m_20150101-20150201_grid-T.nc", "tos"),
    "um_sea_ice_velocity": FieldSpec("iris-sample-data", "UM/northward_sea_ice_velocity.*.pp"),
    "um_uk_hires_theta": FieldSpec("iris-sample-data", "uk_hires.pp"),
    "um_colpex_theta": FieldSpec("iris-sample-data", "colpex.pp"),
}


def field_names() -> list[str]:
    return list(FIELDS)


def field_path(spec: FieldSpec, dest: Path = DEFAULT_DEST) -> Path:
    root = iris_root() if spec.source == "iris-sample-data" else debian_root(dest, spec.source)
    return root / spec.path


def load_field(name: str, missing: str = "nan", dest: Path = DEFAULT_DEST) -> np.ndarray:
    """The field ``name`` as a C-contiguous native-float array with length-1 axes squeezed."""
    if name not in FIELDS:
        raise KeyError(f"unknown field {name!r}; known: {', '.join(FIELDS)}")
    if missing not in ("nan", "mean", "raw"):
        raise ValueError(f"missing must be nan, mean or raw, not {missing!r}")
    spec = FIELDS[name]
    path = field_path(spec, dest)
    data, fill = _read_pp_stack(path) if spec.path.endswith(".pp") else _read_netcdf(path, spec.variable)
    data = np.ascontiguousarray(np.squeeze(data))
    if missing == "raw" or not fill:
        return data
    bad = np.isin(data, np.asarray(fill, dtype=data.dtype)) | (np.abs(data) >= 1e30)
    data[bad] = np.nan if missing == "nan" else data[~bad].mean()
    return data


def _read_netcdf(path: Path, variable: str) -> tuple[np.ndarray, list[float]]:
    # netCDF4 loads its own libhdf5; when it is loaded first, hdf5plugin's filters bind to it and fail in
    # h5py ("error during user callback" from Blosc's set_local). Load h5py's HDF5 and the plugins first.
    import hdf5plugin  # noqa: F401
    import netCDF4

    with netCDF4.Dataset(path) as nc:
        var = nc.variables[variable]
        var.set_auto_maskandscale(False)  # fills are handled explicitly by the caller
        data = np.array(var[...])
        fill = [float(getattr(var, a)) for a in ("_FillValue", "missing_value") if a in var.ncattrs()]
    if data.dtype.kind != "f":
        raise ValueError(f"{path}:{variable}: {data.dtype} is not a native float field")
    return data.astype(data.dtype.newbyteorder("=")), fill


_PP_LBROW, _PP_LBNPT, _PP_LBPACK, _PP_STASH, _PP_BMDI = 17, 18, 20, 41, 62  # 0-based words of the PP header


def _read_pp_stack(pattern: Path) -> tuple[np.ndarray, list[float]]:
    """Stack the records of the UM PP file(s) matching ``pattern`` that hold the first record's STASH item.

    A PP field is two Fortran records: a 64-word big-endian header (45 ints, 19 reals), then the data
    (big-endian float32, possibly padded past LBROW*LBNPT).
    """
    fields, fill, stash = [], set(), None
    for path in sorted(glob.glob(str(pattern))):
        raw = Path(path).read_bytes()
        records, off = [], 0
        while off < len(raw):
            n = int(np.frombuffer(raw, ">i4", 1, off)[0])
            records.append(raw[off + 4 : off + 4 + n])
            off += n + 8
        for header, body in zip(records[0::2], records[1::2]):
            ints = np.frombuffer(header, ">i4", 45)
            stash = int(ints[_PP_STASH]) if stash is None else stash
            if ints[_PP_STASH] != stash:  # files mix quantities (e.g. theta and pressure)
                continue
            if ints[_PP_LBPACK] != 0:
                raise ValueError(f"{path}: packed PP field (LBPACK={ints[_PP_LBPACK]}) not supported")
            rows, cols = int(ints[_PP_LBROW]), int(ints[_PP_LBNPT])
            fields.append(np.frombuffer(body, ">f4", rows * cols).reshape(rows, cols))
            fill.add(float(np.frombuffer(header, ">f4", 1, _PP_BMDI * 4)[0]))
    if not fields:
        raise OSError(f"no PP files match {pattern}")
    return np.stack(fields).astype(np.float32), sorted(fill)
