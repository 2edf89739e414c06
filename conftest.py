"""pytest: every test sees the shipped profiles, whatever this machine's own calibration says."""
import pytest


@pytest.fixture(autouse=True)
def _no_machine_profile(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("IOADVISOR_PROFILE", str(tmp_path_factory.getbasetemp() / "no-machine-profile.json"))
