import dataclasses

import pytest

from tests.worker.conftest import CPU_HARNESS, candidate
from worker.formats.cuda.build import build
from worker.formats.cuda.ptxas import demangle_base, parse_ptxas

SPILLY_KERNEL = """
__global__ void heavy_kernel_optimized(const float* __restrict__ in, float* out, int n, int k) {
    __shared__ float tile[128];
    float acc[48];
    #pragma unroll
    for (int j = 0; j < 48; ++j) acc[j] = in[threadIdx.x + j * n];
    tile[threadIdx.x % 128] = acc[0];
    __syncthreads();
    for (int r = 0; r < k; ++r) {
        #pragma unroll
        for (int j = 0; j < 48; ++j) acc[j] = acc[j] * acc[(j + 1) % 48] + tile[(j + r) % 128];
    }
    float s = 0;
    #pragma unroll
    for (int j = 0; j < 48; ++j) s += acc[j];
    out[threadIdx.x] = s;
}
extern "C" void heavy_optimized(const float* in, float* out, int n, int k) {
    heavy_kernel_optimized<<<1, 128>>>(in, out, n, k);
}
"""


def compile_source(nvcc, tmp_path, source, *flags):
    from worker.engine import sandbox
    (tmp_path / "k.cu").write_text(source)
    res = sandbox.run(
        [nvcc, "-arch=sm_90", *flags, "-Xptxas", "-v", "-c", "k.cu", "-o", "k.o"], tmp_path, 300
    )
    assert res.ok, res.output
    return res.output


def test_parses_registers_shared_memory_barriers_and_spills_from_a_real_compile(nvcc, tmp_path):
    log = compile_source(nvcc, tmp_path, SPILLY_KERNEL, "-maxrregcount=32")
    (kernel,) = parse_ptxas(log)
    assert kernel.kernel == "heavy_kernel_optimized" and kernel.mangled.startswith(
        "_Z22heavy_kernel_optimized"
    )
    assert kernel.arch == "sm_90"
    assert 0 < kernel.registers <= 32
    assert kernel.shared_bytes == 512 and kernel.barriers == 1
    assert kernel.spill_stores > 0 and kernel.spill_loads > 0 and kernel.stack_bytes > 0


def test_a_kernel_without_pressure_reports_no_spills(nvcc, tmp_path):
    log = compile_source(
        nvcc, tmp_path, "__global__ void k_kernel_optimized(float* a) { a[threadIdx.x] = 1.f; }"
    )
    (kernel,) = parse_ptxas(log)
    assert kernel.spill_stores == 0 and kernel.spill_loads == 0 and kernel.shared_bytes == 0


def test_parses_the_older_ptxas_line_format():
    log = (
        "ptxas info    : Compiling entry function '_Z3fooPf' for 'sm_80'\n"
        "ptxas info    : Function properties for _Z3fooPf\n"
        "    16 bytes stack frame, 4 bytes spill stores, 8 bytes spill loads\n"
        "ptxas info    : Used 40 registers, 2048 bytes smem, 368 bytes cmem[0], 8 bytes cmem[2]\n"
    )
    (k,) = parse_ptxas(log)
    assert (
        k.kernel,
        k.registers,
        k.shared_bytes,
        k.const_bytes,
        k.stack_bytes,
        k.spill_stores,
        k.spill_loads,
    ) == ("foo", 40, 2048, 376, 16, 4, 8)


@pytest.mark.parametrize(
    ("mangled", "name"),
    [
        ("_Z18k_kernel_optimizedPfi", "k_kernel_optimized"),
        ("_ZN2ns6kernelEv", "kernel"),
        ("_Z4tileILi256EEvPf", "tile"),
        ("plain_c_name", "plain_c_name"),
    ],
)
def test_demangles_kernel_base_names(mangled, name):
    assert demangle_base(mangled) == name


@pytest.mark.parametrize(("late", "pic"), [("1", "-Xcompiler -fPIC "), ("0", "")],
                         ids=["loaded after the lockdown", "linked in"])
def test_returns_compile_errors_verbatim_with_the_exact_command(late, pic, scale_spec, no_gpu_chain, tmp_path,
                                                               monkeypatch):
    monkeypatch.setenv("KW_LOAD_AFTER_LOCKDOWN", late)
    built = build(
        scale_spec,
        "fp32",
        no_gpu_chain,
        candidate("scale_syntax_error.cu"),
        "nvcc -O2",
        work_dir=tmp_path / "w",
        harness_dir=CPU_HARNESS,
        cache_dir=tmp_path / "cache",
    )
    assert not built.ok and built.failure is built.candidate
    assert built.candidate.command == (
        "nvcc -O2 -arch=sm_90 -Xptxas -v -lineinfo -DCCCL_DISABLE_NVTX -DNVTX_DISABLE "
        f"{pic}-c candidate.cu -o candidate.o"
    )
    assert 'candidate.cu(3): error: expected a ";"' in built.candidate.log
    assert "undeclared_name += 1;" in built.candidate.log  # nvcc's source excerpt, untouched
    assert built.baseline.ok and built.harness.ok and built.link is None


def test_a_repeated_build_is_served_from_the_cache(scale_spec, no_gpu_chain, tmp_path):
    args = dict(harness_dir=CPU_HARNESS, cache_dir=tmp_path / "cache")
    first = build(
        scale_spec, "fp32", no_gpu_chain, candidate("scale_good.cu"), "-O3", work_dir=tmp_path / "a", **args
    )
    assert first.ok and first.cache_hits == ()
    second = build(
        scale_spec, "fp32", no_gpu_chain, candidate("scale_good.cu"), "-O3", work_dir=tmp_path / "b", **args
    )
    assert second.ok and second.cache_hits == ("baseline", "harness", "candidate", "link")
    assert second.key == first.key and second.candidate.command == first.candidate.command
    # A different candidate recompiles only its own object.
    third = build(
        scale_spec, "fp32", no_gpu_chain, candidate("scale_wrong.cu"), "-O3", work_dir=tmp_path / "c", **args
    )
    assert third.ok and third.cache_hits == ("baseline", "harness")


def test_the_cache_key_covers_flags_and_the_compiler_version(scale_spec, no_gpu_chain, tmp_path):
    args = dict(harness_dir=CPU_HARNESS, cache_dir=tmp_path / "cache")
    build(
        scale_spec, "fp32", no_gpu_chain, candidate("scale_good.cu"), "-O3", work_dir=tmp_path / "a", **args
    )
    other_flags = build(
        scale_spec, "fp32", no_gpu_chain, candidate("scale_good.cu"), "-O1", work_dir=tmp_path / "b", **args
    )
    assert "candidate" not in other_flags.cache_hits
    newer = dataclasses.replace(no_gpu_chain, nvcc_version="V99.9")
    other_nvcc = build(
        scale_spec, "fp32", newer, candidate("scale_good.cu"), "-O3", work_dir=tmp_path / "c", **args
    )
    assert other_nvcc.cache_hits == ()


def test_rejected_flags_fall_back_to_the_defaults_and_keep_the_reason(scale_spec, no_gpu_chain, tmp_path):
    built = build(
        scale_spec,
        "fp32",
        no_gpu_chain,
        candidate("scale_good.cu"),
        "nvcc -O3 -Xcompiler -fopenmp",
        work_dir=tmp_path / "w",
        harness_dir=CPU_HARNESS,
        cache_dir=tmp_path / "cache",
    )
    assert built.ok
    assert not built.flags.ok and "-Xcompiler" in built.flags.reason
    assert built.candidate.command.startswith("nvcc -O3 -arch=sm_90 -std=c++17 ")
    assert "-Xcompiler" in built.notes[0]


def test_builds_the_bf16_harness_with_its_define(scale_spec, no_gpu_chain, tmp_path):
    built = build(
        scale_spec,
        "bf16",
        no_gpu_chain,
        None,
        work_dir=tmp_path / "w",
        harness_dir=CPU_HARNESS,
        cache_dir=tmp_path / "cache",
    )
    assert built.ok, built.failure and built.failure.log
    assert "-DKW_BF16" in built.harness.command and built.candidate is None


@pytest.mark.parametrize(
    ("flags", "asks"),
    [(("-O3", "-Xptxas", "-v"), True), (("-Xptxas=-v",),  True), (("--ptxas-options", "--verbose"), True),
     (("-O3", "-Xptxas", "-O3"), False), ((), False)],
)
def test_ptxas_verbose_is_not_added_twice(flags, asks):
    from worker.formats.cuda.ptxas import asks_ptxas_verbose

    assert asks_ptxas_verbose(flags) is asks


@pytest.fixture
def full_disk(tmp_path):
    """A real 64 KiB tmpfs: too small for the objects, so writes fail with ENOSPC."""
    import subprocess

    mount = tmp_path / "small"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    yield mount
    subprocess.run(["umount", str(mount)], check=False)


def test_a_full_build_cache_costs_only_reuse_and_leaves_no_broken_entry(scale_spec, no_gpu_chain, tmp_path,
                                                                         full_disk):
    args = dict(harness_dir=CPU_HARNESS, cache_dir=full_disk / "cache")
    first = build(scale_spec, "fp32", no_gpu_chain, candidate("scale_good.cu"), "-O3", work_dir=tmp_path / "a",
                  **args)
    assert first.ok
    uncached = [r for r in (first.baseline, first.harness, first.candidate, first.link) if "not cached" in r.log]
    assert uncached and all("No space left on device" in r.log for r in uncached)
    entries = list((full_disk / "cache").rglob("*"))
    assert not [p for p in entries if p.name.startswith(".tmp-")]
    for meta in [p for p in entries if p.suffix == ".json"]:
        assert meta.with_suffix(".o").is_file() or meta.with_suffix(".bin").is_file()  # no entry without object
    second = build(scale_spec, "fp32", no_gpu_chain, candidate("scale_good.cu"), "-O3", work_dir=tmp_path / "b",
                   **args)
    assert second.ok and second.key == first.key


def test_every_task_links_one_shared_runtime_object_and_keeps_only_its_own_code(no_gpu_chain, tmp_path):
    import json

    from testing.gpu_candidates import LIBRARY
    from worker.engine import objcheck

    cache = tmp_path / "cache"
    for task, precision in (("vector_add", "fp32"), ("RELU", "fp32")):
        built = build(LIBRARY[task], precision, no_gpu_chain, None, work_dir=tmp_path / task / precision,
                      cache_dir=cache)
        assert built.ok, built.failure.log if built.failure else built.link.log
        assert "kw_runtime.cu" in built.harness.command  # reported as the harness's step
        own = objcheck.global_definitions(tmp_path / task / precision / "harness" / "harness.o")
        assert not any("run_main" in name for name in own), "the task's harness.o compiled the runtime again"
    roles = [json.loads(meta.read_text())["role"] for meta in (cache / "objects").glob("*.json")]
    assert roles.count("runtime") == 1 and roles.count("harness") == 2  # the second task reused the first's


def test_kwbench_refuses_an_unknown_l2_flush_mode_and_names_the_two_it_takes(no_gpu_chain, tmp_path):
    """--l2-flush-mode is read before the device is opened, so a typo is a usage error on any host."""
    import json
    import subprocess

    from testing.gpu_candidates import LIBRARY

    built = build(LIBRARY["vector_add"], "fp32", no_gpu_chain, None, work_dir=tmp_path / "w",
                  cache_dir=tmp_path / "cache")
    assert built.ok, built.failure.log if built.failure else built.link.log

    def error_of(mode: str) -> dict:
        out = tmp_path / f"{mode}.json"
        subprocess.run([built.executable, "--mode", "time", "--impl", "baseline", "--size", "N=1024",
                        "--l2-flush-mode", mode, "--out", str(out)], capture_output=True, timeout=120)
        return json.loads(out.read_text()).get("error") or {}

    refused = error_of("sideways")
    assert refused["kind"] == "bad_args"
    assert refused["message"] == "--l2-flush-mode must be write or read, not 'sideways'"
    assert error_of("read").get("kind") != "bad_args"  # accepted: no device here, or a timed run on a GPU host
