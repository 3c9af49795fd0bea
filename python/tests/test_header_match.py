"""The binding's declarations (jobboard._native: CDEF, SYNC_CDEF) against
the C headers (include/jobboard.h, include/jobboard_sync.h).

cffi's ABI mode trusts the declarations it is given: a struct that grew a
field in the header, or a function whose argument changed type, would be
read and called wrongly without an error. So a C program, compiled with
the build's compiler ($JB_TEST_CC, else cc) against the real headers,
reports every size, offset and constant the binding declares, and assigns
every declared function to a pointer of the type the binding declares for
it (with -Werror, a mismatch does not compile). A function the header
adds must be bound or named in _native.UNBOUND, with the reason.

The header's deprecated section (the names replaced in 0.2, kept under
#ifndef JB_NO_DEPRECATED) is left out: the programs are compiled with
JB_NO_DEPRECATED, so a declaration or constant of the binding that only
that section provides does not compile, and the binding must not declare
the section's functions.
"""

import os
import re
import shlex
import subprocess

import pytest

import jobboard
from jobboard import _native, board as jb, errors
from jobboard._native import ffi, lib

TOP = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
HEADER = os.path.join(TOP, "include", "jobboard.h")
SYNC_HEADER = os.path.join(TOP, "include", "jobboard_sync.h")

# The Python enums and the prefix of their members in the header.
ENUMS = {
    jb.Priority: "JB_PRIORITY_", jb.State: "JB_STATE_",
    jb.Durability: "JB_DURABILITY_", jb.EventType: "JB_EVENT_",
    jb.End: "JB_END_", jb.DeadCause: "JB_DEAD_", jb.CatchUp: "JB_CATCHUP_",
    jb.Outcome: "JB_OUTCOME_",
}


def _sync_ffi():
    """The FFI holding CDEF and SYNC_CDEF (parsed only: libjbsync is not
    loaded, so this runs on a build without Redis too)."""
    import cffi
    f = cffi.FFI()
    f.cdef(_native.CDEF)
    f.cdef(_native.SYNC_CDEF)
    return f


def _functions(cdef):
    """(return type, name, arguments) of each function the cdef declares,
    as written there."""
    text = re.sub(r"/\*.*?\*/", " ", cdef, flags=re.S)
    text = re.sub(r"^#define.*$", " ", text, flags=re.M)
    text = re.sub(r"typedef\s+struct\s*\w*\s*\{[^}]*\}\s*\w+\s*;", " ", text)
    out = []
    for stmt in text.split(";"):
        stmt = " ".join(stmt.split())
        if not stmt or stmt.startswith("typedef"):
            continue
        m = re.match(r"^(.*?)\b(\w+)\s*\((.*)\)$", stmt)
        assert m, "cannot read the declaration %r" % stmt
        out.append(m.groups())
    return out


# The deprecated section: from its #ifndef to the #endif that names it.
_DEPRECATED = re.compile(r"^#ifndef JB_NO_DEPRECATED\b.*?"
                         r"^#endif /\* JB_NO_DEPRECATED \*/", re.S | re.M)


def _read_header(path):
    """(current, deprecated): the header's text without its deprecated
    section, and that section ("" when it has none)."""
    with open(path) as f:
        text = f.read()
    found = _DEPRECATED.findall(text)
    assert len(found) <= 1, "%s: more than one deprecated section" % path
    return _DEPRECATED.sub("", text), "".join(found)


def _extern_functions(text):
    return set(re.findall(r"JB_EXTERN\b[^;(]*?\b(jb_\w+)\s*\(", text))


def _header_functions(path):
    """The functions the header declares, its deprecated ones left out."""
    return _extern_functions(_read_header(path)[0])


def _deprecated_functions(path):
    return _extern_functions(_read_header(path)[1])


def _structs(f):
    """{typedef name: [(field, ctype)]} of the cdef's struct typedefs."""
    out = {}
    for name in f.list_types()[0]:
        t = f.typeof(name)
        if t.kind == "struct" and t.fields is not None:
            out[name] = t.fields
    return out


def _scalars(f):
    """The typedef names the cdef declares as plain integers (the header's
    enums)."""
    return [n for n in f.list_types()[0] if f.typeof(n).kind == "primitive"]


def _constants():
    """{C name: value} of every constant the Python side uses: the cdef's
    #defines, the members of the enums and the error codes."""
    out = {n: getattr(lib, n) for n in dir(lib)
           if n.startswith("JB_") and isinstance(getattr(lib, n), int)}
    for cls, prefix in ENUMS.items():
        for m in cls:
            out[prefix + m.name] = int(m)
    for code, cls in errors._BY_CODE.items():
        out[cls.name] = code
    out["JB_OK"] = 0
    return out


def _includes(with_sync):
    lines = ["#include <stddef.h>", "#include <stdio.h>",
             "#include <stdlib.h>", '#include "jobboard.h"']
    if with_sync:
        lines.append('#include "jobboard_sync.h"')
    return lines


def _signatures(with_sync):
    """A translation unit (compiled, not linked) holding a pointer of the
    declared type for each function, initialised with the header's
    function: a different signature is an incompatible pointer."""
    lines = _includes(with_sync)
    cdefs = _native.CDEF + (_native.SYNC_CDEF if with_sync else "")
    for ret, name, args in _functions(cdefs):
        lines.append("%s (*p_%s)(%s) = %s;" % (ret, name, args, name))
    return "\n".join(lines) + "\n"


def _program(f, with_sync):
    """A program that prints the header's sizes, offsets and constants."""
    lines = _includes(with_sync)
    lines.append("int main(void) {")
    for name in _scalars(f):
        lines.append('  printf("size %s %%zu\\n", sizeof(%s));' % (name, name))
    for name, fields in _structs(f).items():
        lines.append('  printf("size %s %%zu\\n", sizeof(%s));' % (name, name))
        for fname, fld in fields:
            member = "((%s *)0)->%s" % (name, fname)
            signed = "0"
            if fld.type.kind == "primitive" and fld.type.cname != "_Bool":
                signed = "(int)((__typeof__(%s))-1 < 0)" % member
            lines.append('  printf("field %s.%s %%zu %%zu %%d\\n", '
                         'offsetof(%s, %s), sizeof(%s), %s);'
                         % (name, fname, name, fname, member, signed))
    for cname in sorted(_constants()):
        lines.append('  printf("const %s %%llu\\n", '
                     '(unsigned long long)(%s));' % (cname, cname))
    lines.append("  return 0;\n}")
    return "\n".join(lines) + "\n"


def _compile(tmp_path, name, source, *args):
    cc = shlex.split(os.environ.get("JB_TEST_CC") or "cc")
    src = tmp_path / (name + ".c")
    src.write_text(source)
    cmd = cc + ["-std=c11", "-Wall", "-Werror", "-DJB_NO_DEPRECATED",
                "-I", os.path.dirname(HEADER),
                "-I", os.path.dirname(SYNC_HEADER), str(src)] + list(args)
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       universal_newlines=True)
    assert p.returncode == 0, "the declarations do not match the header:\n" \
        + p.stdout


def _compile_and_run(tmp_path, source):
    exe = tmp_path / "match"
    _compile(tmp_path, "match", source, "-o", str(exe))
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)  # a sanitizer runtime the program lacks
    out = subprocess.run([str(exe)], stdout=subprocess.PIPE, check=True,
                         universal_newlines=True, env=env).stdout
    return out.splitlines()


def test_every_struct_function_and_constant_matches_the_header(tmp_path):
    with_sync = os.path.exists(SYNC_HEADER)
    f = _sync_ffi() if with_sync else ffi
    _compile(tmp_path, "signatures", _signatures(with_sync), "-c", "-o",
             str(tmp_path / "signatures.o"))
    got = _compile_and_run(tmp_path, _program(f, with_sync))
    problems = []
    consts = _constants()
    seen = 0
    for line in got:
        kind, what, *vals = line.split()
        vals = [int(v) for v in vals]
        seen += 1
        if kind == "size":
            if f.sizeof(what) != vals[0]:
                problems.append("sizeof(%s): C %d, Python %d"
                                % (what, vals[0], f.sizeof(what)))
        elif kind == "field":
            s, fname = what.split(".")
            fld = dict(f.typeof(s).fields)[fname]
            py = (f.offsetof(s, fname), f.sizeof(fld.type))
            if py != tuple(vals[:2]):
                problems.append("%s: C offset %d size %d, Python offset %d "
                                "size %d" % ((what,) + tuple(vals[:2]) + py))
            # A plain int in the binding is one of the header's enums
            # (unsigned for the compiler when no value is negative).
            if fld.type.kind == "primitive" and \
                    fld.type.cname not in ("_Bool", "int"):
                py_signed = int(f.cast(fld.type, -1) < 0)
                if py_signed != vals[2]:
                    problems.append("%s: signed in C %d, in Python %d"
                                    % (what, vals[2], py_signed))
        elif kind == "const":
            if consts[what] % (1 << 64) != vals[0]:
                problems.append("%s: C %d, Python %d"
                                % (what, vals[0], consts[what]))
    assert not problems, "\n".join(problems)
    nfields = sum(len(v) for v in _structs(f).values())
    assert seen == len(_scalars(f)) + len(_structs(f)) + nfields + \
        len(consts)


def test_every_header_function_is_bound_or_listed():
    declared = {name for _, name, _ in _functions(_native.CDEF)}
    header = _header_functions(HEADER)
    assert len(header) > 100  # the regex reads the header
    unbound = set(_native.UNBOUND)
    assert header - declared == unbound, (
        "jobboard.h functions neither declared in _native.CDEF nor listed "
        "in _native.UNBOUND: %s; listed but gone or declared: %s"
        % (sorted(header - declared - unbound),
           sorted(unbound - (header - declared))))
    assert declared <= header
    if os.path.exists(SYNC_HEADER):
        sync = {name for _, name, _ in _functions(_native.SYNC_CDEF)}
        assert sync - {"free"} <= _header_functions(SYNC_HEADER)


def test_no_deprecated_function_is_declared():
    deprecated = _deprecated_functions(HEADER)
    assert "jb_job_claim_next_wait" in deprecated  # the regex reads it
    assert not deprecated & _header_functions(HEADER)
    declared = {name for _, name, _ in _functions(_native.CDEF)}
    assert not declared & deprecated, (
        "_native.CDEF declares deprecated functions (use their "
        "replacements): %s" % sorted(declared & deprecated))
    assert not set(_native.UNBOUND) & deprecated


def test_every_declared_function_is_in_the_library():
    for _, name, _ in _functions(_native.CDEF):
        getattr(lib, name)  # AttributeError when the library lacks it


@pytest.mark.parametrize("cls,name_of", [
    (jb.Priority, lib.jb_priority_name), (jb.State, lib.jb_state_name),
    (jb.Durability, lib.jb_durability_name),
    (jb.EventType, lib.jb_event_type_name), (jb.End, lib.jb_end_name),
    (jb.DeadCause, lib.jb_dead_cause_name),
    (jb.CatchUp, lib.jb_catchup_name)])
def test_enum_names_are_the_librarys(cls, name_of):
    for m in cls:
        c = name_of(int(m))
        assert c != ffi.NULL, m
        assert ffi.string(c).decode().upper() == m.name, m
    assert name_of(max(int(m) for m in cls) + 1000) == ffi.NULL


def test_error_codes_are_the_librarys():
    for code, cls in errors._BY_CODE.items():
        assert ffi.string(lib.jb_strerror(code)).decode().startswith(
            cls.name + ":")
    assert jobboard.ExistsError is errors.ExistsError
