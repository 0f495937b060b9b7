"""Link table: every row against the figure on its cited datasheet, lookup, validation, NVLink on detection.

``bandwidth`` is what ONE device sends per second in ONE direction. NVIDIA states NVLink as a
bidirectional total per GPU, so the expected per-direction figure below is that total / 2; a
network port is stated in Gb/s per direction, so it is / 8; PCIe in GT/s per lane, so
lanes × GT/s × 128/130 / 8. Units are decimal (1 GB/s = 1e9 B/s).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from neural_cost.core.errors import HardwareError
from neural_cost.hardware import nvidia
from neural_cost.hardware.detect import detect_hardware
from neural_cost.hardware.interconnect import Interconnect
from neural_cost.hardware.links import gpu_link, link, link_row, load_links, parse_links
from neural_cost.hardware.tables import load_tables

FIXTURES = Path(__file__).parent / "fixtures"
GB = 1e9

PER_DIRECTION = {
    # V100 datasheet (SXM2): NVLink 300 GB/s bidirectional total → 300 / 2 = 150 GB/s per direction
    "nvlink2": 300 / 2 * GB,
    # A100 datasheet: NVLink 600 GB/s total (12 links × 50 GB/s) → 600 / 2 = 300 GB/s per direction
    "nvlink3": 600 / 2 * GB,
    # H100 / H200 SXM datasheets: NVLink 900 GB/s total (18 links × 50 GB/s) → 900 / 2 = 450 GB/s
    "nvlink4": 900 / 2 * GB,
    # NVIDIA NVLink page: Blackwell 18 links × 100 GB/s = 1.8 TB/s total → 1800 / 2 = 900 GB/s
    "nvlink5": 1800 / 2 * GB,
    # PCIe 4.0: 16 GT/s × 16 lanes × 128/130 / 8 = 31.51 GB/s, stated (and stored) as 31.5
    "pcie4-x16": 31.5 * GB,
    # PCIe 5.0: 32 GT/s × 16 lanes × 128/130 / 8 = 63.02 GB/s, stated (and stored) as 63.0
    "pcie5-x16": 63.0 * GB,
    # InfiniBand HDR port: 200 Gb/s / 8 = 25 GB/s; NDR: 400 Gb/s / 8 = 50 GB/s
    "ib-hdr": 200 / 8 * GB,
    "ib-ndr": 400 / 8 * GB,
    # Ethernet: 100 Gb/s / 8 = 12.5 GB/s; 400 Gb/s / 8 = 50 GB/s
    "eth-100g": 100 / 8 * GB,
    "eth-400g": 400 / 8 * GB,
}


def test_every_row_is_its_datasheet_figure_per_direction():
    rows = {row.key: row for row in load_links().links}
    assert set(rows) == set(PER_DIRECTION)
    for key, expected in PER_DIRECTION.items():
        assert rows[key].bandwidth == expected, key


def test_pcie_rows_are_the_encoded_rate_rounded_as_stated():
    # lanes × GT/s × 128/130 / 8 bits, to the 0.1 GB/s the figure is stated in
    assert round(16 * 16 * 128 / 130 / 8, 1) * GB == link("pcie4-x16").bandwidth
    assert round(16 * 32 * 128 / 130 / 8, 1) * GB == link("pcie5-x16").bandwidth


def test_no_row_invents_a_latency():
    for row in load_links().links:
        assert row.latency_seconds == 0.0 and "latency unknown" in row.latency_source, row.key


def test_link_returns_an_interconnect_whose_source_cites_the_datasheet():
    nvlink = link("nvlink4")
    assert isinstance(nvlink, Interconnect) and nvlink.name == "NVLink 4 (H100/H200)"
    assert nvlink.bandwidth == 450e9 and nvlink.latency_seconds == 0.0
    assert "H100 Tensor Core GPU datasheet" in nvlink.source
    assert "900 GB/s bidirectional total per device → 450 GB/s per direction" in nvlink.source
    assert Interconnect.from_dict(nvlink.to_dict()) == nvlink


@pytest.mark.parametrize(
    ("spelled", "key"),
    [("NVLink 3", "nvlink3"), ("nvlink-4", "nvlink4"), ("PCIe 5.0 x16", "pcie5-x16"), ("pcie gen4", "pcie4-x16"),
     ("InfiniBand NDR", "ib-ndr"), ("HDR", "ib-hdr"), ("100GbE", "eth-100g"), ("ETH_400G", "eth-400g")],
)  # fmt: skip
def test_names_match_ignoring_case_spaces_and_punctuation(spelled, key):
    assert link_row(spelled).key == key


def test_an_unknown_link_name_lists_the_known_ones():
    with pytest.raises(HardwareError, match=r"no link named 'nvlink9'.*known links: 'nvlink2' \(NVLink 2 \(V100\)\)"):
        link("nvlink9")
    with pytest.raises(HardwareError, match=r"'eth-400g' \(Ethernet 400GbE\).*Interconnect\(name, bandwidth="):
        link("ethernet 800g")


def test_gpu_keys_name_chip_rows_and_only_sxm_parts_carry_nvlink():
    chips = {row.key for row in load_tables().gpus}
    listed = [gpu for row in load_links().links for gpu in row.gpus]
    assert listed and set(listed) <= chips
    assert gpu_link("h100-sxm").key == "nvlink4" and gpu_link("a100-sxm4-80gb").key == "nvlink3"
    assert gpu_link("b200").key == "nvlink5" and gpu_link("h200-sxm").key == "nvlink4"
    assert gpu_link("h100-pcie") is None and gpu_link("rtx-4090") is None  # a bridge is optional on PCIe cards


ROW = """
[[link]]
key = "x"
name = "X"
bandwidth_gb_s = 300
{extra}
latency_source = "latency unknown"
source = "a datasheet"
"""


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ("bidirectional_gb_s = 300", r"bidirectional_gb_s = 300 is not twice bandwidth_gb_s = 300"),
        ("line_rate_gbit_s = 300", r"line_rate_gbit_s = 300 is not 8 × bandwidth_gb_s = 300"),
        ("latency_us = -1", r"latency_us = -1 must be a positive number \(microseconds\)"),
        ("speed = 1", r"unknown field\(s\) speed"),
    ],
)
def test_the_loader_checks_each_row(extra, message):
    with pytest.raises(HardwareError, match=r"t\.toml: \[\[link\]\] row 1 \(key 'x'\): " + message):
        parse_links(ROW.format(extra=extra), "t.toml")


def test_a_stated_latency_is_read_in_microseconds():
    table = parse_links(ROW.format(extra="latency_us = 2.5"), "t.toml")
    assert link("x", table).latency_seconds == 2.5e-6


def test_one_spelling_names_one_row():
    text = ROW.format(extra="") + ROW.format(extra="").replace('key = "x"', 'key = "y"')
    with pytest.raises(HardwareError, match=r"'X' names both row 'x' and row 'y'"):
        parse_links(text, "t.toml")


def _fixture_probe(name):
    gpus = nvidia.parse_nvidia_smi_csv((FIXTURES / name).read_text())
    return lambda: nvidia.NvidiaProbe(gpus, ())


def test_detection_attaches_the_chips_nvlink(monkeypatch):
    monkeypatch.setattr(nvidia, "probe_nvidia", _fixture_probe("nvidia_smi_8x_h100_sxm.csv"))
    spec, detection = detect_hardware("cuda:3")
    assert spec.interconnects == (link("nvlink4"),)  # H100 SXM: NVLink 4, 900 / 2 = 450 GB/s per direction
    assert detection.sources["interconnects"] == spec.interconnects[0].source
    assert any("peers are reached over NVLink" in note and "not checked" in note for note in detection.notes)


def test_detection_of_a_card_without_on_package_nvlink_attaches_none(monkeypatch):
    monkeypatch.setattr(nvidia, "probe_nvidia", _fixture_probe("nvidia_smi_rtx_4090.csv"))
    spec, detection = detect_hardware("cuda:0")
    assert spec.interconnects == () and "interconnects" not in detection.sources


def test_a_broken_link_table_costs_the_link_not_the_detection(monkeypatch):
    from neural_cost.hardware import links

    def broken(gpu_key, table=None):
        raise HardwareError("links.toml: broken for the test")

    monkeypatch.setattr(links, "gpu_link", broken)
    monkeypatch.setattr(nvidia, "probe_nvidia", _fixture_probe("nvidia_smi_a100_sxm4_80gb.csv"))
    spec, detection = detect_hardware("cuda:0")
    assert spec.interconnects == ()
    assert "no interconnect attached: links.toml: broken for the test" in detection.notes
