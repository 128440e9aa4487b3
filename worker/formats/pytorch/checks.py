"""KernelBench ("pytorch") candidates: the static checks, before any build. A candidate is a whole Python file
defining `class ModelNew(nn.Module)` that compiles its own kernels (usually through
`torch.utils.cpp_extension.load_inline`); it is only read statically here (ast).
"""

from __future__ import annotations

import ast
import re

from worker.engine.static_rules import (
    DEVICE_CONTROL,
    SYSTEM,
    SYSTEM_TYPES,
    TIMING,
    StaticReport,
    Violation,
    strip_comments,
)
from worker.formats.pytorch.spec import PyTorchTaskSpec

# ================================================================ static checks on a candidate
#
# KernelBench's rules, checked before any build. Like worker.formats.cuda.static_checks these are a cheap first line;
# the poisoned correctness check and the device-wide-synchronized timing remain the real defence.

# Imports refused outright, by the rule they break. Threads and processes run work the timing cannot see.
THREAD_MODULES = ("threading", "_thread", "multiprocessing", "concurrent", "asyncio")
# Timing, introspection, process and file access: ways to fake a result or reach the harness in-process.
TAMPER_MODULES = (
    "time", "timeit", "builtins", "importlib", "ctypes", "cffi", "gc", "inspect", "subprocess", "signal",
    "pickle", "marshal", "runpy", "socket", "shutil", "tempfile", "pty", "code", "codeop", "io", "pathlib",
    "atexit", "__main__",
)
# Python names that put work on another stream (outside the timed one) or capture graphs on one.
STREAM_NAMES = (
    "torch.cuda.Stream", "torch.cuda.stream", "torch.cuda.ExternalStream", "torch.cuda.set_stream",
    "torch.cuda.StreamContext", "torch.Stream", "torch.cuda.graph", "torch.cuda.graphs", "torch.cuda.CUDAGraph",
)
# Python names that time, patch, load or reach outside: referenced at all, they are refused. A trailing
# "*" matches a prefix (os.exec* covers execv, execvp, ...).
TAMPER_NAMES = (
    "torch.cuda.Event", "torch.Event", "torch.load", "torch._C", "torch.cuda.empty_cache",
    "torch.cuda.caching_allocator_alloc", "torch.cuda.caching_allocator_delete", "torch.cuda.memory",
    "sys.modules", "sys._getframe", "sys.exit", "sys.settrace", "sys.setprofile", "sys.meta_path",
    "sys.path_hooks", "os.system", "os.popen", "os.fork", "os.forkpty", "os.kill", "os.killpg", "os._exit",
    "os.abort", "os.posix_spawn*", "os.exec*", "os.spawn*", "os.putenv", "os.unsetenv", "os.environ.update",
    "os.environ.setdefault", "os.environ.pop", "os.environ.clear",
)
TAMPER_BUILTINS = (
    "eval", "exec", "compile", "open", "__import__", "globals", "vars", "breakpoint", "input", "exit", "quit",
)
TAMPER_ATTRIBUTES = (
    "__globals__", "__builtins__", "__code__", "__closure__", "__subclasses__", "__mro__", "__bases__",
    "__base__", "__dict__", "__traceback__", "tb_frame", "f_back", "f_globals", "f_locals", "f_builtins",
    "gi_frame", "cr_frame",
)
# In the C++/CUDA source strings: other streams, host threads and host callbacks escape the timed stream.
CPP_STREAM_PATTERNS = (
    r"\bcudaStreamCreate\w*",
    r"\bgetStreamFromPool\b",
    r"\bgetStreamFromExternal\b",
    r"\bsetCurrentCUDAStream\b",
    r"\bCUDAStreamGuard\b",
    r"\bcudaStreamPerThread\b",
    r"\bcudaLaunchHostFunc\b",
    r"\bcudaStreamAddCallback\b",
    r"\bstd\s*::\s*(?:thread|jthread|async)\b",
    r"\bpthread_?\w*",
    r"#\s*include\s*<thread>",
)
# In the C++/CUDA source strings: reaching back into Python, plus worker.formats.cuda.static_checks' timing, system
# and device-control lists (the same rules a C/CUDA candidate obeys).
CPP_TAMPER_PATTERNS = (
    r"\bPy(?:Run|Import|Eval|Sys)_\w+",
    r"\bPyObject_(?:Set|Del)Attr\w*",
    r"\bPy_CompileString\w*",
    r"\b(?:py|pybind11)\s*::\s*(?:exec|eval|eval_file|globals|module_?\s*::\s*import)\b",
    r"\bstd\s*::\s*chrono\b",
    r"##",  # token pasting builds identifiers (cudaStream##Create...) that no pattern here can see
)
# Calls allowed in ModelNew.forward when forbid_torch_compute is on: allocation, layout and metadata,
# never arithmetic. Anything else under torch.* (torch.matmul, torch.nn.functional.relu, ...) is refused.
TORCH_ALLOWED_CALLS = (
    "torch.empty", "torch.empty_like", "torch.empty_strided", "torch.zeros", "torch.zeros_like", "torch.ones",
    "torch.ones_like", "torch.full", "torch.full_like", "torch.tensor", "torch.as_tensor", "torch.arange",
    "torch.device", "torch.dtype", "torch.Size", "torch.is_tensor", "torch.is_floating_point", "torch.numel",
    "torch.get_default_dtype", "torch.promote_types", "torch.result_type", "torch.finfo", "torch.iinfo",
    "torch.no_grad", "torch.inference_mode", "torch.reshape", "torch.flatten", "torch.transpose",
    "torch.permute", "torch.squeeze", "torch.unsqueeze", "torch.narrow", "torch.as_strided", "torch.chunk",
    "torch.split", "torch.unbind", "torch.nn.Parameter", "torch.cuda.current_device", "torch.cuda.current_stream",
    "torch.cuda.default_stream", "torch.cuda.get_device_properties", "torch.cuda.get_device_capability",
    "torch.cuda.is_available", "torch.cuda.device", "torch.cuda.device_count", "torch.cuda.synchronize",
)
# Tensor methods (and ATen/torch:: functions in the C++ sources) that compute. Method calls are refused by
# name because the receiver's type is unknown statically; views, casts, .contiguous(), .size(), .data_ptr()
# and the extension's own functions are not on the list.
COMPUTE_OPS = (
    "matmul", "mm", "bmm", "mv", "dot", "vdot", "addmm", "addmv", "addbmm", "baddbmm", "einsum", "linear",
    "bilinear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
    "convolution", "softmax", "log_softmax", "sum", "nansum", "mean", "max", "min", "amax", "amin",
    "argmax", "argmin", "prod", "cumsum", "cumprod", "cummax", "cummin", "logcumsumexp", "sort", "argsort",
    "topk", "kthvalue", "median", "mode", "relu", "relu_", "relu6", "gelu", "sigmoid", "sigmoid_", "tanh",
    "tanh_", "silu", "mish", "elu", "selu", "celu", "softplus", "softsign", "hardtanh", "hardsigmoid",
    "hardswish", "leaky_relu", "logsigmoid", "exp", "exp_", "expm1", "log", "log_", "log1p", "log2", "sqrt",
    "rsqrt", "pow", "pow_", "square", "abs", "abs_", "neg", "reciprocal", "sign", "erf", "sin", "cos", "floor",
    "ceil", "round", "clamp", "clamp_", "clip", "add", "add_", "sub", "sub_", "mul", "mul_", "div", "div_",
    "addcmul", "addcdiv", "lerp", "norm", "var", "std", "var_mean", "std_mean", "logsumexp", "layer_norm",
    "group_norm", "batch_norm", "instance_norm", "where", "masked_fill", "masked_fill_", "index_select",
    "gather", "scatter", "scatter_add", "index_add", "cross_entropy", "nll_loss", "mse_loss", "max_pool1d",
    "max_pool2d", "max_pool3d", "avg_pool1d", "avg_pool2d", "avg_pool3d", "scaled_dot_product_attention",
    "tril", "triu", "diag", "outer", "cross", "all", "any",
)
# nn.Module classes that only hold weights: creating and reading them is fine, calling them is not a thing.
PARAMETER_HOLDERS = ("torch.nn.Parameter", "torch.nn.ParameterList", "torch.nn.ParameterDict", "torch.nn.Buffer")
_CUSTOM_BUILDERS = ("torch.utils.cpp_extension.load_inline", "torch.utils.cpp_extension.load")


def check_candidate(source: str, spec: PyTorchTaskSpec) -> StaticReport:
    """Apply KernelBench's rules to a candidate file; every violation names its line and rule."""
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        return StaticReport((Violation("syntax", exc.lineno or 0, f"not valid Python: {exc.msg}"),))
    cand = _Candidate(tree)
    out: list[Violation] = []
    out += cand.check_model_new()
    out += cand.check_custom_code()
    out += cand.check_python_rules()
    out += _check_cpp_strings(cand, spec.forbid_torch_compute)
    if spec.forbid_torch_compute and cand.model_new is not None:
        out += cand.check_forward_compute()
    unique = {(v.line, v.rule, v.message): v for v in out}
    return StaticReport(tuple(sorted(unique.values(), key=lambda v: (v.line, v.rule, v.message))))


def _matches(name: str, patterns: tuple[str, ...]) -> str | None:
    for pattern in patterns:
        if pattern.endswith("*") and name.startswith(pattern[:-1]):
            return pattern
        if name == pattern or name.startswith(pattern + "."):
            return pattern
    return None


class _Candidate:
    """One parsed candidate: its import aliases, module-level names and the ModelNew class."""

    def __init__(self, tree: ast.Module):
        self.tree = tree
        self.aliases: dict[str, str] = {}  # local name -> dotted module path or object
        self.module_names: set[str] = set()  # local names bound to imported modules or their members
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    local = a.asname or a.name.split(".")[0]
                    self.aliases[local] = a.name if a.asname else a.name.split(".")[0]
                    self.module_names.add(local)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for a in node.names:
                    self.aliases[a.asname or a.name] = f"{node.module}.{a.name}"
                    self.module_names.add(a.asname or a.name)
        self.functions = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        self.classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
        self.model_new = self.classes.get("ModelNew")
        self.extensions: set[str] = set()  # module-level names bound to a compiled extension
        for node in tree.body:
            if isinstance(node, ast.Assign) and self._is_builder_call(node.value):
                self.extensions |= {t.id for t in node.targets if isinstance(t, ast.Name)}
            elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                target = self.resolve(node.value)
                if target and target.startswith("torch."):  # `mm = torch.matmul`: an alias of a torch op
                    self.aliases[node.targets[0].id] = target

    def resolve(self, node: ast.AST) -> str | None:
        """The dotted name an expression refers to, imports substituted (`F.relu` -> torch.nn.functional.relu)."""
        if isinstance(node, ast.Name):
            return self.aliases.get(node.id, node.id)
        if isinstance(node, ast.Attribute):
            base = self.resolve(node.value)
            return f"{base}.{node.attr}" if base else None
        return None

    def _is_builder_call(self, node: ast.AST) -> bool:
        if not isinstance(node, ast.Call):
            return False
        name = self.resolve(node.func) or ""
        return name in _CUSTOM_BUILDERS or name.endswith(".load_inline") or name == "load_inline"

    # ------------------------------------------------------------ structure

    def check_model_new(self) -> list[Violation]:
        cls = self.model_new
        if cls is None:
            return [Violation("model-new", 0, "no `class ModelNew(nn.Module)` at module level: the candidate "
                                              "must define ModelNew with the same constructor and forward as Model")]
        out = []
        if not any((self.resolve(b) or "").split(".")[-1] == "Module" for b in cls.bases):
            out.append(Violation("model-new", cls.lineno, "class ModelNew must subclass nn.Module"))
        if not any(isinstance(n, ast.FunctionDef) and n.name == "forward" for n in cls.body):
            out.append(Violation("model-new", cls.lineno, "class ModelNew defines no forward() method"))
        return out

    def check_custom_code(self) -> list[Violation]:
        if any(self._is_builder_call(n) for n in ast.walk(self.tree)):
            return []
        return [Violation("custom-code", 0, "no load_inline(...) or torch.utils.cpp_extension.load(...) call: "
                                            "the candidate must compile its own kernels")]

    # ------------------------------------------------------------ tampering, fallbacks, streams (whole file)

    def check_python_rules(self) -> list[Violation]:
        out: list[Violation] = []

        def add(rule: str, node: ast.AST, message: str) -> None:
            out.append(Violation(rule, getattr(node, "lineno", 0), message))

        inner = {id(n.value) for n in ast.walk(self.tree) if isinstance(n, ast.Attribute)}
        for node in ast.walk(self.tree):
            if isinstance(node, (ast.Try, getattr(ast, "TryStar", ast.Try))):
                add("no-fallback", node, "try/except is not allowed: a candidate may not fall back to PyTorch "
                                         "or hide its own errors")
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                mods = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                for mod in mods:
                    root = mod.split(".")[0]
                    if root in THREAD_MODULES:
                        add("streams-threads", node, f"imports {mod}: threads and processes run work the timing "
                                                     "cannot see")
                    elif root in TAMPER_MODULES:
                        add("tampering", node, f"imports {mod}: timing, introspection, files and processes are "
                                               "off limits to a candidate")
            elif isinstance(node, (ast.Attribute, ast.Name)):
                out += self._check_reference(node, outermost=id(node) not in inner)
            elif isinstance(node, ast.Call):
                out += self._check_call(node)
            if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
                targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
                for target in targets:
                    out += self._check_target(target)
        return out

    def _check_target(self, target: ast.AST) -> list[Violation]:
        """Assignments (and del) into modules: monkey-patching torch, time, ... or the environment."""
        if isinstance(target, (ast.Tuple, ast.List)):
            return [v for t in target.elts for v in self._check_target(t)]
        if isinstance(target, ast.Starred):
            return self._check_target(target.value)
        if isinstance(target, ast.Subscript):
            key = target.slice.value if isinstance(target.slice, ast.Constant) else None
            if self.resolve(target.value) == "os.environ" and key != "TORCH_CUDA_ARCH_LIST":
                return [Violation("tampering", target.lineno, f"sets the environment variable {key or '(computed)'}: "
                                                              "only TORCH_CUDA_ARCH_LIST may be set")]
            return []
        if isinstance(target, ast.Attribute):
            root = target
            while isinstance(root, ast.Attribute):
                root = root.value
            if isinstance(root, ast.Name) and root.id in self.module_names:
                message = f"assigns to {self.resolve(target)}: monkey-patching modules is not allowed"
                return [Violation("tampering", target.lineno, message)]
        return []

    def _check_reference(self, node: ast.Attribute | ast.Name, outermost: bool) -> list[Violation]:
        out = []
        line = node.lineno
        if isinstance(node, ast.Attribute) and node.attr in TAMPER_ATTRIBUTES:
            out.append(Violation("tampering", line, f"uses .{node.attr}: introspection of frames, globals and "
                                                    "classes is not allowed"))
        if isinstance(node, ast.Name) and node.id in ("__builtins__", "__import__", "__loader__"):
            out.append(Violation("tampering", line, f"uses {node.id}"))
        # Only the outermost attribute of a chain is judged, so torch.cuda.Event.record reports once.
        name = self.resolve(node) or ""
        if not outermost or (isinstance(node, ast.Name) and node.id not in self.aliases):
            return out
        hit = _matches(name, STREAM_NAMES)
        if hit:
            out.append(Violation("streams-threads", line, f"uses {name}: work on another stream (or a captured "
                                                          "graph) escapes the timed stream"))
        hit = _matches(name, TAMPER_NAMES)
        if hit:
            out.append(Violation("tampering", line, f"uses {name}: timing, patching, loading and process "
                                                    "control belong to the harness"))
        return out

    def _check_call(self, node: ast.Call) -> list[Violation]:
        func = node.func
        if self.resolve(func) in ("contextlib.suppress", "suppress"):
            return [Violation("no-fallback", node.lineno, "suppress() hides errors like try/except")]
        if not isinstance(func, ast.Name) or func.id in self.aliases:
            return []
        first = node.args[0] if node.args else None
        if func.id in TAMPER_BUILTINS:
            return [Violation("tampering", node.lineno, f"calls {func.id}(): dynamic code, files and input are "
                                                        "not allowed")]
        if func.id in ("setattr", "delattr") and not (isinstance(first, ast.Name) and first.id == "self"):
            return [Violation("tampering", node.lineno, f"calls {func.id}() on something other than self")]
        if func.id == "getattr" and isinstance(first, (ast.Name, ast.Attribute)):
            root = first
            while isinstance(root, ast.Attribute):
                root = root.value
            if isinstance(root, ast.Name) and root.id in self.module_names:
                return [Violation("tampering", node.lineno, f"calls getattr() on {self.resolve(first)}: look "
                                                            "functions up by name, not dynamically")]
        return []

    # ------------------------------------------------------------ forbid_torch_compute: what forward reaches

    def check_forward_compute(self) -> list[Violation]:
        cls = self.model_new
        assert cls is not None
        methods = {n.name: n for n in cls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        layers, ops, exts, submodules = self._self_attributes(cls)
        out: list[Violation] = []
        queue: list[tuple[str, ast.AST]] = [("ModelNew.forward", methods["forward"])] if "forward" in methods else []
        seen: set[int] = set()
        while queue:
            where, func = queue.pop(0)
            if id(func) in seen:
                continue
            seen.add(id(func))
            local_exts, local_layers, local_ops = set(), set(), {}
            for node in ast.walk(func):
                if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                    attr = _self_attr(node.value)
                    value = self.resolve(node.value) or ""
                    if attr in exts or (isinstance(node.value, ast.Name) and node.value.id in self.extensions):
                        local_exts.add(node.targets[0].id)
                    elif attr in layers:
                        local_layers.add(node.targets[0].id)
                    elif value.startswith("torch.") and value not in TORCH_ALLOWED_CALLS:
                        local_ops[node.targets[0].id] = value  # `mm = torch.mm` inside the method
                elif isinstance(node, (ast.For, ast.comprehension)) and _self_attr(node.iter) in layers:
                    local_layers |= {t.id for t in ast.walk(node.target) if isinstance(t, ast.Name)}
            for node in ast.walk(func):
                line = getattr(node, "lineno", 0)

                def flag(what: str, line: int = line, where: str = where) -> None:
                    out.append(Violation(
                        "torch-compute", line,
                        f"{where} {what}: this task forbids PyTorch compute in ModelNew.forward "
                        "(rules.forbid_torch_compute); compute in your own kernels (allocation, views, casts "
                        "and metadata are allowed)",
                    ))

                if isinstance(node, (ast.BinOp, ast.AugAssign)) and isinstance(node.op, ast.MatMult):
                    flag("uses the @ operator (a PyTorch matmul)")
                if not isinstance(node, ast.Call):
                    continue
                f = node.func
                name = self.resolve(f)
                attr = _self_attr(f)
                if name and name.startswith("torch.") and not name.startswith("torch.utils.cpp_extension."):
                    if name not in TORCH_ALLOWED_CALLS:
                        flag(f"calls {name}()")
                elif attr is not None:
                    if attr in layers:
                        flag(f"calls the nn layer self.{attr} ({layers[attr]}, created in __init__)")
                    elif attr in ops:
                        flag(f"calls self.{attr}, which is {ops[attr]}")
                    elif attr in methods:
                        queue.append((f"ModelNew.{attr} (called from forward)", methods[attr]))
                    elif attr in submodules:
                        queue.append((f"{submodules[attr]}.forward (self.{attr})", self._forward_of(submodules[attr])))
                elif isinstance(f, ast.Subscript) and _self_attr(f.value) in layers:
                    flag(f"calls an element of the nn layer container self.{_self_attr(f.value)}")
                elif isinstance(f, ast.Name):
                    if f.id in local_layers:
                        flag(f"calls the nn layer {f.id} (from a layer container)")
                    elif f.id in local_ops:
                        flag(f"calls {local_ops[f.id]}()")
                    elif f.id in self.functions:
                        queue.append((f"{f.id}() (called from forward)", self.functions[f.id]))
                    elif f.id in self.classes and f.id != "ModelNew":
                        queue.append((f"{f.id}.forward", self._forward_of(f.id)))
                elif isinstance(f, ast.Attribute):
                    receiver = f.value
                    receiver_attr = _self_attr(receiver)
                    if receiver_attr in layers:
                        flag(f"calls .{f.attr}() of the nn layer self.{receiver_attr}")
                    elif isinstance(receiver, ast.Name) and receiver.id in self.classes \
                            and f.attr in ("apply", "forward"):
                        queue.append((f"{receiver.id}.forward", self._forward_of(receiver.id)))
                    elif self._is_extension(receiver, exts, local_exts):
                        continue
                    elif isinstance(receiver, ast.Name) and receiver.id in self.module_names:
                        continue  # math.sqrt(d), a module other than torch (torch.* was judged above)
                    elif f.attr in COMPUTE_OPS or (f.attr.startswith("__") and f.attr.endswith("__")):
                        flag(f"calls the tensor method .{f.attr}()")
        return out

    def _forward_of(self, class_name: str) -> ast.AST:
        cls = self.classes.get(class_name)
        if cls is None:
            return ast.Pass()
        return next((n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "forward"), ast.Pass())

    def _is_extension(self, node: ast.AST, exts: set[str], local_exts: set[str]) -> bool:
        if isinstance(node, ast.Name):
            return node.id in self.extensions or node.id in local_exts
        return _self_attr(node) in exts

    def _self_attributes(self, cls: ast.ClassDef) -> tuple[dict[str, str], dict[str, str], set[str], dict[str, str]]:
        """self.X assignments anywhere in ModelNew: nn layers, torch ops, extensions, the file's own modules."""
        layers: dict[str, str] = {}
        ops: dict[str, str] = {}
        exts: set[str] = set()
        submodules: dict[str, str] = {}
        for node in ast.walk(cls):
            if not isinstance(node, (ast.Assign, ast.AnnAssign)) or node.value is None:
                continue
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                attr = _self_attr(target)
                if attr is None:
                    continue
                value = node.value
                if isinstance(value, ast.Call):
                    made = self.resolve(value.func) or ""
                    if self._is_builder_call(value):
                        exts.add(attr)
                    elif made.startswith("torch.nn.") and made.split(".")[-1][:1].isupper() \
                            and made not in PARAMETER_HOLDERS:
                        layers[attr] = made.replace("torch.nn.", "nn.", 1)
                    elif isinstance(value.func, ast.Name) and value.func.id in self.classes:
                        submodules[attr] = value.func.id
                elif isinstance(value, ast.Name) and value.id in self.extensions:
                    exts.add(attr)
                else:
                    made = self.resolve(value) or ""
                    if made.startswith("torch.") and made not in TORCH_ALLOWED_CALLS:
                        ops[attr] = made
        return layers, ops, exts, submodules


def _self_attr(node: ast.AST) -> str | None:
    """'X' for `self.X`, else None."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return node.attr
    return None


def _check_cpp_strings(cand: _Candidate, forbid_torch_compute: bool) -> list[Violation]:
    """The rules inside the C++/CUDA sources: every string literal except docstrings, comments removed."""
    docstrings = set()
    for node in ast.walk(cand.tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docstrings.add(id(first.value))
    rules: list[tuple[str, str, str]] = []  # (rule, regex, what it means)
    rules += [("streams-threads", p, "uses another stream, a host thread or a host callback")
              for p in CPP_STREAM_PATTERNS]
    rules += [("tampering", p, "reaches into Python or the clock") for p in CPP_TAMPER_PATTERNS]
    rules += [("tampering", rf"(?<![\w.>]){re.escape(n)}\s*\(", "times itself; timing belongs to the harness")
              for n in TIMING]
    rules += [("tampering", rf"(?<![\w.>:]){re.escape(n)}\s*\(", "touches processes, files or the environment")
              for n in SYSTEM]
    rules += [("tampering", rf"\bstd\s*::\s*{re.escape(n)}\b", "touches threads or files") for n in SYSTEM_TYPES]
    rules += [("tampering", rf"\b{re.escape(n)}\s*\(", "controls the device; the harness owns it")
              for n in DEVICE_CONTROL]
    if forbid_torch_compute:
        ops = "|".join(re.escape(o) for o in COMPUTE_OPS)
        what = "calls a PyTorch compute op in C++: this task forbids PyTorch compute (rules.forbid_torch_compute)"
        rules += [
            ("torch-compute", rf"\b(?:torch|at)\s*::\s*(?:native\s*::\s*)?(?:{ops})\s*\(", what),
            ("torch-compute", r"\btorch\s*::\s*nn\s*::\s*functional\s*::\s*\w+\s*\(", what),
            ("torch-compute", rf"\.\s*(?:{ops})\s*\(", what),
        ]
    compiled = [(rule, re.compile(rx), what) for rule, rx, what in rules]
    out = []
    for node in ast.walk(cand.tree):
        if not (isinstance(node, ast.Constant) and isinstance(node.value, str)) or id(node) in docstrings:
            continue
        if "\n" not in node.value and "(" not in node.value and "#" not in node.value and "::" not in node.value:
            continue  # names and flags, not code
        code = strip_comments(node.value, blank_strings=True)
        for rule, rx, what in compiled:
            for m in rx.finditer(code):
                line = node.lineno + code.count("\n", 0, m.start())
                out.append(Violation(rule, line, f"{m.group(0).strip()} in a C++/CUDA source: {what}"))
    return out
