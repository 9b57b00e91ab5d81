"""The watch stop condition: the seed's examples work, known sandbox escapes do not."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from turnstoned import condition
from turnstoned.condition import ConditionError, compile_condition, evaluate

PR = json.dumps({"state": "MERGED", "mergedAt": "2024-05-01T10:00:00Z", "checks": [
    {"name": "ci", "status": "success"}, {"name": "lint", "status": "success"}]})


def _eval(source: str, output: str = PR, exit_code: int = 0, prev: str | None = None) -> bool:
    return evaluate(compile_condition(source), output, exit_code, prev)


# ---------------------------------------------------------------- what works

SEED_EXAMPLES = [
    ('data["state"] == "MERGED"', PR, 0, None, True),
    ('"error" in output', "build error: x", 0, None, True),
    ("exit_code != 0", "", 2, None, True),
    ('changed and "ready" in output.lower()', "Service READY", 0, "starting", True),
    ('data.get("mergedAt") is not None', PR, 0, None, True),
]


@pytest.mark.parametrize(("source", "output", "code", "prev", "expected"), SEED_EXAMPLES)
def test_the_seed_examples(source: str, output: str, code: int, prev: str | None,
                           expected: bool) -> None:
    assert _eval(source, output, code, prev) is expected


@pytest.mark.parametrize(("source", "expected"), [
    ('data["state"] == "OPEN"', False),
    ('not changed', False),
    ("prev_output is None", True),
    ('all(c["status"] == "success" for c in data["checks"])' if False else
     'all([data["checks"][0]["status"] == "success", data["checks"][1]["status"] == "success"])',
     True),
    ('len(data["checks"]) >= 2 and data["checks"][-1]["name"] == "lint"', True),
    ('isinstance(data, dict) and isinstance(data.get("checks"), (list, tuple))', True),
    ('output.strip().startswith("{")', True),
    ('int("42") + 1 == 43 and float("1.5") * 2 == 3.0', True),
    ('max([3, 9, 4]) == 9 and min(5, 2) == 2 and abs(-3) == 3', True),
    ('sorted(data.keys())[0] == "checks"', True),
    ('"MERGED" if exit_code == 0 else "no"', True),
    ('output[:1] == "{" and output[::-1][-1] == "{"', True),
    ('2 ** 10 == 1024 and 7 // 2 == 3 and 7 % 2 == 1', True),
    ('"ci" in [c["name"] for c in []] ' if False else '"ci" in str(data["checks"])', True),
    ('any([exit_code == 1, "MERGED" in output])', True),
    ('data.get("missing", 0) == 0 and "state" in data', True),
    ('output.count("success") == 2 and "," .join(["a", "b"]) == "a,b"', True),
    ('bool(data) and str(exit_code) == "0"', True),
    ('0 < len(output) < 10000', True),
])
def test_the_language(source: str, expected: bool) -> None:
    assert _eval(source, PR, 0, None) is expected


def test_data_is_none_when_output_is_not_json() -> None:
    assert _eval("data is None", "plain text")
    assert _eval("data is None", "[" * 5000 + "]" * 5000)  # too deep for the JSON parser


# ---------------------------------------------------------------- what does not

# Known ways out of Python "sandboxes" built on eval with restricted builtins, and
# expressions that try to exhaust time or memory. Each must be refused, either when
# the watch is created (the checker) or when it runs (a ConditionError, never a value).
ESCAPES = [
    # dunder access and the object graph
    "().__class__",
    "().__class__.__bases__[0].__subclasses__()",
    "().__class__.__base__.__subclasses__()",
    "''.__class__.__mro__[1].__subclasses__()",
    "[].__class__.__base__.__subclasses__()",
    "{}.__class__",
    "output.__class__",
    "output.__class__.__mro__",
    "output.__len__()",
    "output.__doc__",
    "output.lower.__self__",
    "output.lower.__call__()",
    "output.startswith.__self__.__class__",
    "data.__getitem__('state')",
    "data.get.__globals__",
    "data.items().__class__",
    "data.get('state').__class__",
    "(1).__class__.__subclasses__()",
    "True.__class__.__bases__",
    "None.__class__",
    "len.__self__",
    "len.__call__(output)",
    "sorted.__module__",
    "str.__subclasses__()",
    "str.mro()",
    "str.lower(output)",
    "type.__subclasses__(type)",
    "(lambda: 0).__globals__",
    "(lambda: 0).__code__.co_consts",
    "output.__init__.__globals__['__builtins__']",
    "[x for x in ()].__class__",
    "output.__getattribute__('__class__')",
    "output.__reduce_ex__(2)",
    "[].__reduce__()",
    "output.__subclasshook__",
    "data.__class__.__init__",
    "output.lower()[0].__class__",
    "().__class__.__bases__[0].__subclasses__()[0].__init__.__globals__['sys']",
    # imports, builtins that are not on the list, and names that are not ours
    "__import__('os').system('id')",
    "__import__",
    "__builtins__",
    "__builtins__['eval']('1')",
    "__loader__",
    "__spec__",
    "eval('1')",
    "exec('import os')",
    "compile('1', '', 'eval')",
    "open('/etc/passwd').read()",
    "getattr(output, '__class__')",
    "setattr(data, 'x', 1)",
    "hasattr(output, 'x')",
    "globals()",
    "locals()",
    "vars()",
    "dir()",
    "type(output)",
    "object()",
    "super()",
    "input()",
    "print(output)",
    "breakpoint()",
    "help()",
    "exit()",
    "memoryview(b'x')",
    "bytes(10)",
    "bytearray(10)",
    "range(10)",
    "iter(output)",
    "chr(65)",
    "os",
    "sys.modules",
    "len",
    "str",
    "isinstance(output, object)",
    "isinstance(output, type)",
    "getattr",
    "vars(output)",
    "frozenset()",
    "classmethod(len)",
    "staticmethod",
    "property",
    "id(output)",
    "hash(output)",
    "repr(output)",
    "ascii(output)",
    # methods off the list, and format strings that reach attributes
    "output.format(output)",
    "'{0.__class__}'.format(output)",
    "'{.__class__.__mro__}'.format(output)",
    "output.format_map(data)",
    "output.encode()",
    "output.maketrans('a', 'b')",
    "output.translate({})",
    "data.pop('state')",
    "data.update({})",
    "data.setdefault('x', 1)",
    "data['checks'].append(1)",
    "data['checks'].clear()",
    "f'{output.__class__}'",
    "f'{output}'",
    "'%s' % output",
    "'%999999999s' % output",
    "format(output, '>999999999')",
    "'{:>999999999}'.format(1)",
    "output.center(10 ** 9)",
    "output.ljust(10 ** 9)",
    "output.zfill(10 ** 9)",
    "output.expandtabs(10 ** 9)",
    "min(output, default=0)",
    # forms the language has no place for
    "lambda: 0",
    "(x := 1)",
    "[c for c in output]",
    "{c for c in output}",
    "{c: c for c in output}",
    "(c for c in output)",
    "any(c for c in output)",
    "sorted(data, key=len)",
    "max(output, key=len)",
    "len(*[output])",
    "dict(**data)",
    "{**data}",
    "[*output]",
    "{1, 2}",
    "await output",
    "(yield)",
    "...",
    "b'bytes'",
    "1j",
    "~exit_code",
    "exit_code << 100000",
    "1 << 10 ** 9",
    "exit_code | 1",
    "output @ output",
    "x = 1",
    "import os",
    "output; 1",
    "",
    # time and memory bombs
    "9 ** 9 ** 9",
    "10 ** 10 ** 10",
    "2 ** 1000000",
    "(10 ** 100) ** 100",
    " * ".join(["10 ** 100"] * 14),
    "2.0 ** 100000",
    "'a' * 10 ** 9",
    "'a' * (2 ** 62)",
    "[0] * 10 ** 9",
    "output * 1000000",
    "output * 100 * 100",
    "[[output] * 1000] * 1000",
    "str([[0] * 1000] * 1000)",
    "output.split() * 100000",
    "(output * 3).join(output * 3)",
    "output.join([output] * 100)",
    "output.replace('', output)",
    "output.replace('e', output * 3)",
    "sorted(output * 100)",
    " + ".join(["output"] * 30),
    "'x' * 2000" + " + 'x' * 2000" * 60,
    "int('9' * 5000)",
    "1 / 0",
    "[1][5]",
    # deep nesting and long sources
    "len(" * 30 + "output" + ")" * 30,
    "(" * 1000 + "1" + ")" * 1000,
    "not " * 100 + "changed",
    "-" * 900 + "1",
    "[" * 50 + "]" * 50,
    "+".join(["1"] * 300),
    " and ".join(["changed"] * 150),
    "'" + "a" * 5000 + "'",
    "output == '" + "x" * 990 + "'",
]


@pytest.mark.parametrize("source", ESCAPES)
def test_known_escapes_are_refused(source: str) -> None:
    output = PR * 100  # a large, JSON-free output to amplify
    with pytest.raises(ConditionError):
        cond = compile_condition(source)
        evaluate(cond, output, 0, "previous")


def test_the_escape_corpus_is_large() -> None:
    assert len(ESCAPES) >= 150


def test_refusals_say_why() -> None:
    with pytest.raises(ConditionError, match="attribute access"):
        compile_condition("output.__class__")
    with pytest.raises(ConditionError, match="'__import__' is not a function you can call"):
        compile_condition("__import__('os')")
    with pytest.raises(ConditionError, match="a comprehension"):
        compile_condition("[c for c in output]")
    with pytest.raises(ConditionError, match="bits"):
        _eval("9 ** 9 ** 9")
    with pytest.raises(ConditionError, match="grow past"):
        _eval("'a' * 10 ** 9")


def test_the_interpreter_never_calls_eval_exec_or_compile() -> None:
    sources = sorted(Path(condition.__file__).parent.glob("*.py"))
    assert len(sources) >= 3
    for source in sources:
        tree = ast.parse(source.read_text())
        called = {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call)
                  and isinstance(n.func, ast.Name)}
        assert not called & {"eval", "exec", "compile", "__import__"}, source
        assert not any(isinstance(n, ast.Attribute) and n.attr == "literal_eval"
                       for n in ast.walk(tree)), source
