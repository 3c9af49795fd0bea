# python/: the Python package `jobboard`: cffi bindings (ABI
# mode: python/jobboard/_native.py dlopens libjobboard.so.0, and
# libjbsync.so.0 for a synced board) and a taskflow jobboard backend.
#
# When configure found a Python with cffi and msgpack (WITH_PYTHON), `make
# install` puts into $(pythondir):
#   jobboard/*.py                 JB_PY_MODULES below
#   jobboard/_paths.py            LIBDIR = "$(libdir)", where _native.py looks
#   jobboard-$(VERSION).dist-info METADATA (python/METADATA.in),
#                                 entry_points.txt (python/entry_points.txt:
#                                 the taskflow.jobboards entry point), INSTALLER,
#                                 RECORD
# and `make uninstall` removes exactly these (and the .pyc files Python may
# have written beside our modules). tests/python.sh runs python/tests with
# pytest on the built libraries.
#
# Each module of the package is listed here (install, uninstall, RECORD and
# the tarball); tests/python.sh fails when python/jobboard holds one that is
# not listed.
JB_PY_MODULES = \
	python/jobboard/__init__.py \
	python/jobboard/_native.py \
	python/jobboard/board.py \
	python/jobboard/errors.py \
	python/jobboard/taskflow_backend.py
# The tests are shipped as a directory (dist-hook drops Python's caches).
EXTRA_DIST += $(JB_PY_MODULES) python/entry_points.txt python/tests \
	tests/python.sh

TESTS += tests/python.sh
# tests/python.sh learns how the tree was configured and built from these
# (JB_TEST_* only: other tests never read them).
if WITH_PYTHON
JB_TEST_PYTHON_ENABLED = yes
else
JB_TEST_PYTHON_ENABLED = no
endif
if WITH_REDIS
JB_TEST_REDIS_ENABLED = yes
else
JB_TEST_REDIS_ENABLED = no
endif
AM_TESTS_ENVIRONMENT = \
	JB_TEST_PYTHON_ENABLED=$(JB_TEST_PYTHON_ENABLED); \
	JB_TEST_PYTHON='$(PYTHON)'; \
	JB_TEST_REDIS_ENABLED=$(JB_TEST_REDIS_ENABLED); \
	JB_TEST_CC='$(CC)'; \
	JB_TEST_VERSION='$(VERSION)'; \
	JB_TEST_PY_MODULES='$(JB_PY_MODULES)'; \
	JB_TEST_TOP_BUILDDIR='$(abs_top_builddir)'; \
	export JB_TEST_PYTHON_ENABLED JB_TEST_PYTHON JB_TEST_REDIS_ENABLED \
	JB_TEST_CC JB_TEST_VERSION JB_TEST_PY_MODULES JB_TEST_TOP_BUILDDIR;

dist-hook:
	find "$(distdir)/python" \( -name __pycache__ -o -name .pytest_cache \) \
	  -prune -exec rm -rf {} +

JB_PY_PKGDIR = $(pythondir)/jobboard
JB_PY_DISTINFO = $(pythondir)/jobboard-$(VERSION).dist-info
# RECORD: each installed file's path (relative to pythondir), sha256
# (urlsafe base64, unpadded) and size, then RECORD itself.
JB_PY_RECORD = import base64, hashlib, os, sys; \
	root, record = sys.argv[1], sys.argv[2]; \
	digest = lambda p: base64.urlsafe_b64encode(hashlib.sha256(open(p, "rb").read()).digest()).rstrip(b"=").decode(); \
	lines = ["%s,sha256=%s,%d" % (f, digest(os.path.join(root, f)), os.path.getsize(os.path.join(root, f))) for f in sys.argv[3:]]; \
	open(os.path.join(root, record), "w").write("\n".join(lines + [record + ",,"]) + "\n")

if WITH_PYTHON
JB_PY_INSTALL = install-python-package
JB_PY_UNINSTALL = uninstall-python-package
endif
# (install-data-local and uninstall-local, in Makefile.am, run them.)

install-python-package:
	$(MKDIR_P) "$(DESTDIR)$(JB_PY_PKGDIR)" "$(DESTDIR)$(JB_PY_DISTINFO)"
	for f in $(JB_PY_MODULES); do \
	  $(INSTALL_DATA) "$(srcdir)/$$f" "$(DESTDIR)$(JB_PY_PKGDIR)/" || exit 1; \
	done
	$(PYTHON) -c 'import json, sys; print("# Written by make install: where libjobboard.so.0 is.\nLIBDIR = " + json.dumps(sys.argv.pop()))' \
	  "$(libdir)" >"$(DESTDIR)$(JB_PY_PKGDIR)/_paths.py"
	$(INSTALL_DATA) python/METADATA "$(DESTDIR)$(JB_PY_DISTINFO)/METADATA"
	$(INSTALL_DATA) "$(srcdir)/python/entry_points.txt" \
	  "$(DESTDIR)$(JB_PY_DISTINFO)/entry_points.txt"
	echo make >"$(DESTDIR)$(JB_PY_DISTINFO)/INSTALLER"
	d=jobboard-$(VERSION).dist-info; \
	files="jobboard/_paths.py $$d/METADATA $$d/entry_points.txt $$d/INSTALLER"; \
	for f in $(JB_PY_MODULES); do files="$$files jobboard/$${f##*/}"; done; \
	$(PYTHON) -c '$(JB_PY_RECORD)' "$(DESTDIR)$(pythondir)" "$$d/RECORD" $$files

uninstall-python-package:
	for f in $(JB_PY_MODULES) _paths.py; do \
	  b=$${f##*/}; \
	  rm -f "$(DESTDIR)$(JB_PY_PKGDIR)/$$b" \
	    "$(DESTDIR)$(JB_PY_PKGDIR)/__pycache__/$${b%.py}".*.pyc; \
	done
	for f in METADATA entry_points.txt INSTALLER RECORD; do \
	  rm -f "$(DESTDIR)$(JB_PY_DISTINFO)/$$f"; \
	done
	rmdir "$(DESTDIR)$(JB_PY_PKGDIR)/__pycache__" 2>/dev/null || :
	rmdir "$(DESTDIR)$(JB_PY_PKGDIR)" "$(DESTDIR)$(JB_PY_DISTINFO)" 2>/dev/null || :

.PHONY: install-python-package uninstall-python-package

# Python's ctypes/cffi dlopen "libjobboard.so.0" through the loader's cache:
# after installing into the real root as root, into a directory the loader
# searches (ldconfig lists it), refresh that cache. Not with DESTDIR, not as
# another user, not for another prefix (make distcheck's).
install-exec-hook:
	@if test -z "$(DESTDIR)" && test "`id -u`" = 0 && \
	  command -v ldconfig >/dev/null 2>&1 && \
	  ldconfig -vNX 2>/dev/null | grep -q "^$(libdir):"; then \
	  echo " ldconfig"; ldconfig; \
	fi

# make installcheck (run by make distcheck on its own prefix; Makefile.am's
# installcheck-local runs installcheck-python when built with Python): the installed
# package, from a directory outside the tree, loads the installed library
# through the libdir written into _paths.py, and taskflow finds its entry
# point and opens a board with it. With DESTDIR, the libdir in _paths.py
# is not there yet: the loader finds the library under DESTDIR.
if WITH_PYTHON
JB_PY_INSTALLCHECK = installcheck-python
endif
installcheck-python:
	d=`mktemp -d "$${TMPDIR:-/tmp}/jobboard-installcheck.XXXXXX"` && \
	cd "$$d" && \
	env -u JOBBOARD_LIBRARY -u JOBBOARD_SYNC_LIBRARY \
	  PYTHONPATH="$(DESTDIR)$(pythondir)" PYTHONDONTWRITEBYTECODE=1 \
	  XDG_CACHE_HOME="$$d" \
	  $${DESTDIR:+LD_LIBRARY_PATH="$(DESTDIR)$(libdir)"} $(PYTHON) -c 'import sys, jobboard; \
from jobboard import _native, _paths; \
assert _paths.LIBDIR == sys.argv[1], (_paths.LIBDIR, sys.argv[1]); \
b = jobboard.Board(sys.argv[2] + "/b", create=True); b.post("x"); \
assert b.count() == 1; b.close(); \
print("installcheck: jobboard", jobboard.version(), "from", jobboard.__file__); \
import importlib.util; \
sys.exit(0) if importlib.util.find_spec("taskflow") is None else None; \
from taskflow.jobs import backends; \
tb = backends.fetch("ic", {"board": "jobboard", "path": sys.argv[2] + "/b"}); \
tb.connect(); assert tb.job_count == 1; tb.close(); \
print("installcheck: taskflow entry point jobboard ->", type(tb).__name__)' \
	  "$(libdir)" "$$d"; rc=$$?; rm -rf "$$d"; exit $$rc

.PHONY: installcheck-python
