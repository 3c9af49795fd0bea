# contrib/: examples for users, installed as documentation.
#
# contrib/systemd: unit examples (a worker and the Redis replicator), their
# environment files, a sysusers.d file and a README, installed into
# $(docdir)/examples/systemd, never into systemd's directories. The units
# are installed with ExecStart= naming the installed jobboard
# ($(bindir)/jobboard) and their Documentation= this directory.
JB_SYSTEMD_UNITS = \
	contrib/systemd/jobboard-worker@.service \
	contrib/systemd/jobboard-sync@.service
JB_SYSTEMD_DOCS = \
	contrib/systemd/README.md \
	contrib/systemd/jobboard.env \
	contrib/systemd/example.env \
	contrib/systemd/jobboard.sysusers.conf
JB_SYSTEMD_DIR = $(docdir)/examples/systemd
EXTRA_DIST += $(JB_SYSTEMD_UNITS) $(JB_SYSTEMD_DOCS)

install-contrib-systemd:
	$(MKDIR_P) "$(DESTDIR)$(JB_SYSTEMD_DIR)"
	for f in $(JB_SYSTEMD_DOCS); do \
	  $(INSTALL_DATA) "$(srcdir)/$$f" "$(DESTDIR)$(JB_SYSTEMD_DIR)/" || exit 1; \
	done
	for f in $(JB_SYSTEMD_UNITS); do \
	  b=$${f##*/}; \
	  sed -e 's|/usr/bin/jobboard|$(bindir)/jobboard|g' \
	    -e 's|/usr/share/doc/jobboard/examples/systemd|$(JB_SYSTEMD_DIR)|g' \
	    "$(srcdir)/$$f" >"$(DESTDIR)$(JB_SYSTEMD_DIR)/$$b.tmp" && \
	  chmod 644 "$(DESTDIR)$(JB_SYSTEMD_DIR)/$$b.tmp" && \
	  mv -f "$(DESTDIR)$(JB_SYSTEMD_DIR)/$$b.tmp" \
	    "$(DESTDIR)$(JB_SYSTEMD_DIR)/$$b" || exit 1; \
	done

uninstall-contrib-systemd:
	for f in $(JB_SYSTEMD_UNITS) $(JB_SYSTEMD_DOCS); do \
	  rm -f "$(DESTDIR)$(JB_SYSTEMD_DIR)/$${f##*/}"; \
	done
	rmdir "$(DESTDIR)$(JB_SYSTEMD_DIR)" "$(DESTDIR)$(docdir)/examples" \
	  "$(DESTDIR)$(docdir)" 2>/dev/null || :

.PHONY: install-contrib-systemd uninstall-contrib-systemd

# systemd-analyze verify on the units (skipped without systemd).
TESTS += tests/systemd_units.sh
EXTRA_DIST += tests/systemd_units.sh

# contrib/bash-completion/jobboard: completion of the CLI's commands and
# options (read from `jobboard --help`), into bash-completion's
# completionsdir (configure: --with-bash-completion-dir).
if WITH_BASH_COMPLETION
bashcompletion_DATA = contrib/bash-completion/jobboard
endif
EXTRA_DIST += contrib/bash-completion/jobboard
