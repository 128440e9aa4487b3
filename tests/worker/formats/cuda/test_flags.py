import pytest

from worker.formats.cuda.flags import check_flags, default_flags

ARCH = "sm_90"


def test_accepts_a_typical_command_and_drops_the_file_names():
    got = check_flags("nvcc -O3 -arch=sm_90 --use_fast_math -Xptxas -v,-O3 -c kernel.cu -o kernel.o", ARCH)
    assert got.ok, got.reason
    assert got.flags == ("-O3", "-arch=sm_90", "--use_fast_math", "-Xptxas", "-v", "-Xptxas", "-O3")  # one per option
    assert got.ignored == ("-c", "kernel.cu", "-o", "kernel.o")


def test_accepts_bare_flags_without_the_program_name():
    got = check_flags("-O2 -lineinfo -maxrregcount=64 -std=c++20", ARCH)
    assert got.ok, got.reason
    assert got.flags == ("-O2", "-lineinfo", "-maxrregcount=64", "-std=c++20", "-arch=sm_90")


@pytest.mark.parametrize(
    "flags",
    [
        "-use_fast_math",
        "--extra-device-vectorization",
        "-ftz=true -prec-div=false -prec-sqrt=false -fmad=true",
        "-Xptxas --allow-expensive-optimizations=true",
        "-Xptxas -dlcm=ca",
        "-Xptxas=-v",
        "-std c++17",
        "-arch sm_90a",
        "--gpu-architecture=sm_90",
        "-gencode arch=compute_90,code=sm_90",
        "-gencode=arch=compute_90a,code=[sm_90a,compute_90a]",
        "/usr/local/cuda/bin/nvcc -O3",
    ],
)
def test_accepts_each_whitelisted_flag_form(flags):
    got = check_flags(flags, ARCH)
    assert got.ok, got.reason


def test_adds_the_worker_arch_when_the_proposal_names_none():
    assert "-arch=sm_90" in check_flags("-O3", ARCH).flags


@pytest.mark.parametrize("char", [";", "|", "&", "$", "`", ">", "<"])
def test_rejects_flags_with_shell_metacharacters(char):
    got = check_flags(f"nvcc -O3 {char} echo hi", ARCH)
    assert not got.ok
    assert repr(char) in got.reason
    assert got.flags == default_flags(ARCH)


def test_rejects_metacharacters_even_inside_quotes():
    got = check_flags("nvcc -O3 '-Xptxas=-v;rm'", ARCH)
    assert not got.ok and "';'" in got.reason


@pytest.mark.parametrize(
    ("proposal", "named"),
    [
        ("nvcc -O3 -arch=sm_80", "sm_80"),
        ("nvcc -gencode arch=compute_80,code=sm_80", "compute_80"),
        ("nvcc -gencode arch=compute_90,code=[sm_90,sm_100]", "sm_100"),
        ("nvcc -arch=native", "native"),
    ],
)
def test_rejects_architectures_other_than_the_workers(proposal, named):
    got = check_flags(proposal, ARCH)
    assert not got.ok
    assert named in got.reason and "sm_90" in got.reason


@pytest.mark.parametrize(
    ("proposal", "token"),
    [
        ("nvcc -O3 -I/etc", "-I/etc"),
        ("nvcc -DFOO=1", "-DFOO=1"),
        ("nvcc -Xcompiler -fopenmp", "-Xcompiler"),
        ("nvcc -G", "-G"),
        ("nvcc -rdc=true", "-rdc=true"),
        ("nvcc --keep", "--keep"),
        ("nvcc -Xptxas --output-file=/tmp/x", "--output-file=/tmp/x"),
        ("nvcc -O4", "-O4"),
        ("nvcc -std=c++11", "c++11"),
        ("nvcc -maxrregcount=9999", "9999"),
        ("nvcc -L/opt/lib", "-L/opt/lib"),
        ("nvcc /etc/passwd", "/etc/passwd"),
    ],
)
def test_rejects_tokens_outside_the_whitelist_naming_the_token(proposal, token):
    got = check_flags(proposal, ARCH)
    assert not got.ok
    assert token in got.reason


def test_rejects_a_command_that_is_not_nvcc():
    got = check_flags("clang++ -O3 x.cu", ARCH)
    assert not got.ok and "clang++" in got.reason


def test_libraries_pass_only_when_the_task_allows_them():
    refused = check_flags("nvcc -O3 -lcublas", ARCH)
    assert not refused.ok and "-lcublas" in refused.reason
    allowed = check_flags("nvcc -O3 -lcublas -lcublasLt", ARCH, allowed_libraries=("cublas",))
    assert allowed.ok, allowed.reason
    assert allowed.libraries == ("cublas", "cublasLt")
    assert "-lcublas" not in allowed.flags  # libraries go to the link step


def test_empty_proposal_means_the_default_flags():
    got = check_flags("", ARCH)
    assert got.ok and got.flags == default_flags(ARCH)


def test_unbalanced_quotes_are_rejected_not_raised():
    got = check_flags("nvcc -O3 '-lineinfo", ARCH)
    assert not got.ok and "parse" in got.reason
