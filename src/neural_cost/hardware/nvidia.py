"""NVIDIA GPU probing: NVML (the ``nvidia`` extra) first, ``nvidia-smi`` as the fallback.

What a probe reads is identity and limits (name, UUID, memory, maximum clocks, bus width,
compute capability, driver), never a peak: peaks come from the chip tables, keyed by the
exact name read here. No GPU, no driver, no NVML and no ``nvidia-smi`` are normal outcomes:
the probe returns no GPUs and says why in its notes; only a programming error raises.

``parse_nvidia_smi_csv`` is a pure function of text so recorded outputs from other machines
test it; ``probe_nvidia`` takes the NVML module and the command runner as arguments so tests
pass fakes. The command runner (``CommandRunner``, ``run_tool``) is shared with ``apple.py``.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ..core.errors import HardwareError

_MIB = 1024 * 1024
NVIDIA_SMI_TIMEOUT_S = 30.0

# The fields asked of nvidia-smi, in the order parse_nvidia_smi_csv reads them.
NVIDIA_SMI_FIELDS: tuple[str, ...] = (
    "index",
    "name",
    "uuid",
    "memory.total",
    "clocks.max.sm",
    "clocks.max.memory",
    "driver_version",
    "compute_cap",
)
_REQUIRED_FIELDS = frozenset({"index", "name", "uuid", "memory.total"})

NVML_INSTALL_HINT = "nvidia-ml-py is not installed (pip install 'neural-cost[nvidia]')"


# --- running a command ------------------------------------------------------------------


class CompletedCommand(Protocol):
    """What a finished command gives back (``subprocess.CompletedProcess`` with text=True)."""

    @property
    def returncode(self) -> int: ...

    @property
    def stdout(self) -> str: ...

    @property
    def stderr(self) -> str: ...


class CommandRunner(Protocol):
    """``subprocess.run``'s shape, as the probes call it; tests pass a fake."""

    def __call__(
        self, args: Sequence[str], *, capture_output: bool, text: bool, timeout: float, check: bool
    ) -> CompletedCommand: ...


def _first_line(text: str | None) -> str:
    for line in (text or "").splitlines():
        if line.strip():
            return line.strip()
    return ""


def run_tool(run: CommandRunner, argv: Sequence[str], timeout: float) -> tuple[str | None, str | None]:
    """(stdout, None) when ``argv`` ran and exited 0; (None, a note saying why) otherwise.

    A missing program, a timeout, an OS refusal and a non-zero exit are outcomes of the
    machine, not errors of the caller, so each becomes a note.
    """
    tool = argv[0]
    try:
        result = run(list(argv), capture_output=True, text=True, timeout=timeout, check=False)
    except FileNotFoundError:
        return None, f"{tool} not found on PATH"
    except subprocess.TimeoutExpired:
        return None, f"{tool} timed out after {timeout:g} s"
    except OSError as error:
        return None, f"{tool} could not be run: {error}"
    if result.returncode != 0:
        detail = _first_line(result.stderr) or _first_line(result.stdout) or "no output"
        return None, f"{tool} exited with status {result.returncode}: {detail}"
    return result.stdout or "", None


# --- records -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class NvidiaGpu:
    """One NVIDIA GPU as NVML or nvidia-smi describes it; None where the source does not say.

    ``name`` is exactly the driver's string ("NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB"),
    the key the chip tables match on. ``index`` is NVML's index (PCI bus order), which is not
    a CUDA ordinal when CUDA_VISIBLE_DEVICES is set or CUDA_DEVICE_ORDER is FASTEST_FIRST:
    match a framework's device by ``uuid``. ``memory_total_bytes`` is the driver's total
    (slightly below the marketing capacity: 81559 MiB on an "80GB" H100). The clocks are the
    maximum (boost) clocks in MHz; ``memory_bus_width_bits`` comes only from NVML.
    """

    index: int
    name: str
    uuid: str
    memory_total_bytes: int
    max_sm_clock_mhz: int | None
    max_memory_clock_mhz: int | None
    memory_bus_width_bits: int | None
    compute_capability: tuple[int, int] | None
    driver_version: str | None
    source: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "name": self.name,
            "uuid": self.uuid,
            "memory_total_bytes": self.memory_total_bytes,
            "max_sm_clock_mhz": self.max_sm_clock_mhz,
            "max_memory_clock_mhz": self.max_memory_clock_mhz,
            "memory_bus_width_bits": self.memory_bus_width_bits,
            "compute_capability": list(self.compute_capability) if self.compute_capability is not None else None,
            "driver_version": self.driver_version,
            "source": self.source,
        }


@dataclass(frozen=True, slots=True)
class NvidiaProbe:
    """The GPUs found (possibly none) and notes on what was tried and what was missing."""

    gpus: tuple[NvidiaGpu, ...]
    notes: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"gpus": [gpu.to_dict() for gpu in self.gpus], "notes": list(self.notes)}


# --- nvidia-smi --------------------------------------------------------------------------


def _absent(value: str) -> bool:
    # nvidia-smi writes "[N/A]", "[Not Supported]", "[Insufficient Permissions]", or "N/A".
    return not value or (value.startswith("[") and value.endswith("]")) or value.upper() == "N/A"


def _int_value(value: str, field: str, line: str) -> int | None:
    if _absent(value):
        return None
    try:
        return int(value)
    except ValueError:
        raise HardwareError(f"nvidia-smi field {field}={value!r} is not a number in line {line!r}") from None


def _compute_capability(value: str, line: str) -> tuple[int, int] | None:
    if _absent(value):
        return None
    major, dot, minor = value.partition(".")
    if not dot or not major.isdigit() or not minor.isdigit():
        raise HardwareError(f"nvidia-smi compute_cap={value!r} is not 'major.minor' in line {line!r}")
    return int(major), int(minor)


def parse_nvidia_smi_csv(text: str, fields: Sequence[str] = NVIDIA_SMI_FIELDS) -> tuple[NvidiaGpu, ...]:
    """GPUs from ``nvidia-smi --query-gpu=<fields> --format=csv,noheader,nounits`` output.

    ``fields`` names the columns in order (the default is ``NVIDIA_SMI_FIELDS``) and must
    include index, name, uuid and memory.total. memory.total is MiB. A field nvidia-smi
    cannot report ("[N/A]", "[Not Supported]") becomes None; a field not asked for is None.
    Raises ``HardwareError`` for a line with the wrong number of columns or a non-number
    where a number belongs: text that is not this query's output.
    """
    columns = tuple(fields)
    missing = _REQUIRED_FIELDS - set(columns)
    if missing:
        raise HardwareError(f"parse_nvidia_smi_csv fields lack {', '.join(sorted(missing))}; ask nvidia-smi for them")
    gpus: list[NvidiaGpu] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        values = [value.strip() for value in line.split(",")]
        if len(values) != len(columns):
            raise HardwareError(
                f"nvidia-smi line has {len(values)} columns, expected {len(columns)} ({', '.join(columns)}): {line!r}"
            )
        row = dict(zip(columns, values, strict=True))
        index = _int_value(row["index"], "index", line)
        memory_mib = _int_value(row["memory.total"], "memory.total", line)
        if index is None or memory_mib is None or _absent(row["name"]) or _absent(row["uuid"]):
            raise HardwareError(f"nvidia-smi line lacks an index, name, uuid or memory.total: {line!r}")
        driver = row.get("driver_version", "")
        gpus.append(
            NvidiaGpu(
                index=index,
                name=row["name"],
                uuid=row["uuid"],
                memory_total_bytes=memory_mib * _MIB,
                max_sm_clock_mhz=_int_value(row.get("clocks.max.sm", ""), "clocks.max.sm", line),
                max_memory_clock_mhz=_int_value(row.get("clocks.max.memory", ""), "clocks.max.memory", line),
                memory_bus_width_bits=None,  # nvidia-smi has no query field for it
                compute_capability=_compute_capability(row.get("compute_cap", ""), line),
                driver_version=None if _absent(driver) else driver,
                source="nvidia-smi",
            )
        )
    return tuple(gpus)


def _nvidia_smi_argv(fields: Sequence[str]) -> list[str]:
    return ["nvidia-smi", f"--query-gpu={','.join(fields)}", "--format=csv,noheader,nounits"]


def _probe_nvidia_smi(run: CommandRunner) -> tuple[tuple[NvidiaGpu, ...], list[str]]:
    notes: list[str] = []
    fields = NVIDIA_SMI_FIELDS
    stdout, note = run_tool(run, _nvidia_smi_argv(fields), NVIDIA_SMI_TIMEOUT_S)
    if note is not None and "compute_cap" in note and "not a valid field" in note:
        # Drivers before R510 do not know compute_cap; the rest of the query still works.
        notes.append("nvidia-smi does not know the compute_cap field (driver older than R510); asked without it")
        fields = tuple(field for field in fields if field != "compute_cap")
        stdout, note = run_tool(run, _nvidia_smi_argv(fields), NVIDIA_SMI_TIMEOUT_S)
    if stdout is None:
        notes.append(note or "nvidia-smi gave no output")
        return (), notes
    try:
        gpus = parse_nvidia_smi_csv(stdout, fields)
    except HardwareError as error:
        notes.append(f"nvidia-smi output could not be read: {error}")
        return (), notes
    if not gpus:
        notes.append("nvidia-smi listed no GPUs")
    return gpus, notes


# --- NVML --------------------------------------------------------------------------------


def _text(value: Any) -> str:
    # nvidia-ml-py before 11.515 returns bytes from string getters; later versions return str.
    return value.decode("utf-8", errors="replace") if isinstance(value, bytes) else str(value)


def _nvml_error_types(nvml: Any) -> tuple[type[BaseException], ...]:
    """NVMLError (every NVML failure derives from it) and OSError (the library failing to load)."""
    error = getattr(nvml, "NVMLError", None)
    if isinstance(error, type) and issubclass(error, BaseException):
        return (error, OSError)
    return (OSError,)


def _optional(
    errors: tuple[type[BaseException], ...],
    what: str,
    unavailable: list[str],
    getter: Callable[[], Any],
) -> Any:
    """``getter()``, or None (with ``what`` recorded) when NVML says the value is unavailable."""
    try:
        return getter()
    except errors as error:
        unavailable.append(f"{what} ({error})")
        return None


def _nvml_gpu(
    nvml: Any, index: int, driver: str | None, errors: tuple[type[BaseException], ...]
) -> tuple[NvidiaGpu, list[str]]:
    """Device ``index`` and the optional fields NVML could not read (each with NVML's reason).

    Name, UUID and memory are required: NVML failing on them propagates to the caller.
    """
    handle = nvml.nvmlDeviceGetHandleByIndex(index)
    name = _text(nvml.nvmlDeviceGetName(handle))
    uuid = _text(nvml.nvmlDeviceGetUUID(handle))
    memory_total = int(nvml.nvmlDeviceGetMemoryInfo(handle).total)
    unavailable: list[str] = []
    sm_clock = _optional(
        errors, "max SM clock", unavailable, lambda: nvml.nvmlDeviceGetMaxClockInfo(handle, nvml.NVML_CLOCK_SM)
    )
    memory_clock = _optional(
        errors, "max memory clock", unavailable, lambda: nvml.nvmlDeviceGetMaxClockInfo(handle, nvml.NVML_CLOCK_MEM)
    )
    bus_width_getter = getattr(nvml, "nvmlDeviceGetMemoryBusWidth", None)
    if bus_width_getter is None:
        bus_width = None
        unavailable.append("memory bus width (this nvidia-ml-py has no nvmlDeviceGetMemoryBusWidth)")
    else:
        bus_width = _optional(errors, "memory bus width", unavailable, lambda: bus_width_getter(handle))
    capability = _optional(
        errors, "compute capability", unavailable, lambda: nvml.nvmlDeviceGetCudaComputeCapability(handle)
    )
    gpu = NvidiaGpu(
        index=index,
        name=name,
        uuid=uuid,
        memory_total_bytes=memory_total,
        # NVML reports 0 MHz for a clock it cannot read on some virtualised GPUs: unknown, not zero.
        max_sm_clock_mhz=int(sm_clock) if sm_clock else None,
        max_memory_clock_mhz=int(memory_clock) if memory_clock else None,
        memory_bus_width_bits=int(bus_width) if bus_width else None,
        compute_capability=(int(capability[0]), int(capability[1])) if capability is not None else None,
        driver_version=driver,
        source="nvml",
    )
    return gpu, unavailable


def _probe_nvml(nvml: Any) -> tuple[tuple[NvidiaGpu, ...], list[str], bool]:
    """(GPUs, notes, whether NVML answered). NVML answering "no GPUs" is an answer."""
    errors = _nvml_error_types(nvml)
    notes: list[str] = []
    try:
        nvml.nvmlInit()
    except errors as error:
        return (), [f"NVML init failed: {error}"], False
    try:
        try:
            count = int(nvml.nvmlDeviceGetCount())
        except errors as error:
            notes.append(f"NVML could not count GPUs: {error}")
            return (), notes, False
        try:
            driver: str | None = _text(nvml.nvmlSystemGetDriverVersion())
        except errors as error:
            driver = None
            notes.append(f"NVML driver version unavailable: {error}")
        gpus: list[NvidiaGpu] = []
        for index in range(count):
            try:
                gpu, unavailable = _nvml_gpu(nvml, index, driver, errors)
            except errors as error:
                notes.append(f"NVML device {index} skipped: {error}")
                continue
            gpus.append(gpu)
            if unavailable:
                notes.append(f"NVML device {index} ({gpu.name}): unavailable: {'; '.join(unavailable)}")
        if count == 0:
            notes.append("NVML found no NVIDIA GPU")
        return tuple(gpus), notes, True
    finally:
        try:
            nvml.nvmlShutdown()
        except errors as error:
            notes.append(f"NVML shutdown failed: {error}")


def _import_pynvml() -> Any | None:
    try:
        import pynvml
    except ImportError:
        return None
    return pynvml


def probe_nvidia(nvml: Any | None = None, run: CommandRunner | None = None) -> NvidiaProbe:
    """The NVIDIA GPUs on this machine, through NVML, else through ``nvidia-smi``.

    ``nvml`` is the ``pynvml`` module (from ``nvidia-ml-py``, the ``nvidia`` extra), imported
    here when None; ``run`` runs ``nvidia-smi`` (``subprocess.run`` when None). Both are
    arguments so tests can pass recorded fakes.

    NVML is asked first. When it is not installed, fails to initialise (no driver, no
    libnvidia-ml) or cannot count devices, ``nvidia-smi`` is tried; each failure is a note.
    A GPU whose optional fields (max clocks, bus width, compute capability) NVML cannot
    read is kept with those fields None and a note; a GPU NVML cannot name is skipped with
    a note. Never raises for a machine without NVIDIA GPUs.
    """
    notes: list[str] = []
    module = nvml if nvml is not None else _import_pynvml()
    if module is None:
        notes.append(f"NVML unavailable: {NVML_INSTALL_HINT}")
    else:
        gpus, nvml_notes, answered = _probe_nvml(module)
        notes.extend(nvml_notes)
        if answered:
            return NvidiaProbe(gpus=gpus, notes=tuple(notes))
    smi_gpus, smi_notes = _probe_nvidia_smi(run if run is not None else subprocess.run)
    notes.extend(smi_notes)
    return NvidiaProbe(gpus=smi_gpus, notes=tuple(notes))
