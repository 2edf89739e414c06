"""The per-chunk CPU probe (``iomodel.cpuprobe``) and how ``fit_to_machine`` rescales a profile by it."""
from dataclasses import replace

import pytest

from iomodel.cpuprobe import CPU_TOLERANCE, PROBES, cpu_factors, measure_cpu_seconds, priced_seconds
from iomodel.probe import fit_to_machine
from iomodel.profile import load_profile


def _scaled(prof, library, terms, factor):
    coefficients = {lib: dict(c) for lib, c in prof.coefficients.items()}
    for t in terms:
        coefficients[library][t] *= factor
    return replace(prof, coefficients=coefficients)


def _priced(prof):
    """What ``prof`` prices each library's probe runs at: the seconds a machine it describes would measure."""
    return {lib: sum(priced_seconds(prof, lib)) for lib in PROBES}


def test_the_factor_is_how_much_slower_the_probed_terms_ran_than_priced():
    """Issue #30 (r05 on the Intel VM): zarr's per-chunk prices were the fitting machine's, and 720 more 1 MB
    chunks cost about 0.3 ms each here against 0.14 ms priced. A machine whose per-chunk work takes twice the
    profile's price reads 2; the other terms' seconds are taken out first, not spread over the factor."""
    prof = load_profile()
    slow = _scaled(prof, "zarr", PROBES["zarr"].terms, 2.0)
    factors = cpu_factors(prof, _priced(slow))
    assert factors["zarr"] == pytest.approx(2.0)
    assert factors["hdf5"] == pytest.approx(1.0)
    cpu, other = priced_seconds(prof, "zarr")
    assert cpu > 4 * other  # the probe is about the per-chunk prices, else its factor would say little


def test_fit_to_machine_rescales_the_probed_terms_alone_and_says_so():
    prof = load_profile()
    here = {**prof.probe}  # read speeds as profiled: only the CPU probe moves
    seconds = _priced(_scaled(_scaled(prof, "zarr", PROBES["zarr"].terms, 2.5), "hdf5", PROBES["hdf5"].terms, 1.8))
    fitted, note = fit_to_machine(prof, {**here, "cpu_seconds": seconds})
    assert note and "zarr's n_calls, n_chunks, n_zopen, n_memcpy x2.5" in note and "hdf5's n_memcpy x1.8" in note
    assert "page-cache" not in note
    for lib, factor in (("zarr", 2.5), ("hdf5", 1.8)):
        for name, value in prof.coefficients[lib].items():
            want = value * factor if name in PROBES[lib].terms else value
            assert fitted.coefficient(lib, name) == pytest.approx(want), (lib, name)
    # within the tolerance: the profile as it is
    near = _priced(_scaled(prof, "zarr", PROBES["zarr"].terms, CPU_TOLERANCE * 0.95))
    assert fit_to_machine(prof, {**here, "cpu_seconds": near}) == (prof, None)
    # no CPU probe given (a caller passing read speeds alone): read terms only, as before
    assert fit_to_machine(prof, here) == (prof, None)


def test_the_cpu_factor_is_taken_after_the_read_terms_are_rescaled():
    """The probe's page-cache hits are priced at this machine's read speed before the per-chunk factor is
    worked out: a machine slower at both reads at the read probe's factor and the CPU factor, not their sum."""
    prof = load_profile()
    here = {**prof.probe, "page_cache_bps": prof.probe["page_cache_bps"] / 4}
    reads_only, _ = fit_to_machine(prof, here)
    seconds = _priced(_scaled(reads_only, "zarr", PROBES["zarr"].terms, 2.0))
    fitted, note = fit_to_machine(prof, {**here, "cpu_seconds": seconds})
    assert "page-cache read terms x4" in note and "zarr's n_calls, n_chunks, n_zopen, n_memcpy x2 " in note
    assert fitted.coefficient("zarr", "n_chunks") == pytest.approx(2.0 * prof.coefficient("zarr", "n_chunks"))


def test_the_probe_runs_for_real_and_leaves_nothing_behind(tmp_path):
    seconds = measure_cpu_seconds(tmp_path, repeat=1)
    assert set(seconds) == set(PROBES) and all(s > 0 for s in seconds.values())
    assert list(tmp_path.iterdir()) == []


def test_a_library_the_probe_cannot_run_keeps_its_profiled_prices(tmp_path, monkeypatch):
    """Advice never fails for the probe: a library whose runs cannot be made (here: no space left) is left out,
    and ``fit_to_machine`` then leaves its prices as profiled."""
    import iomodel.cases as cases

    real = cases.measure

    def measure(case, *a, **kw):
        if case.library == "hdf5":
            raise OSError(28, "No space left on device")
        return real(case, *a, **kw)

    monkeypatch.setattr(cases, "measure", measure)
    seconds = measure_cpu_seconds(tmp_path, repeat=1)
    assert set(seconds) == {"zarr"} and list(tmp_path.iterdir()) == []
    prof = load_profile()
    fitted, _ = fit_to_machine(prof, {**prof.probe, "cpu_seconds": seconds})
    assert fitted.coefficients["hdf5"] == prof.coefficients["hdf5"]
