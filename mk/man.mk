# mk/man.mk - the man pages logcounter(1) and logcounterd(8), made by
# man/mkman.sh from a hand-written frame (man/*.in) and the built program's
# own --help, so the page and --help cannot drift; tests/suite_docs.sh
# checks that every option of --help is in the page.  `make` builds them
# into $(BUILD)/man/, `make install` puts them under $(MANDIR) (default
# $(PREFIX)/share/man), `make uninstall` removes them.
MANDIR   ?= $(PREFIX)/share/man
MAN_CLI   = $(BUILD)/man/logcounter.1
MAN_DAEMON = $(BUILD)/man/logcounterd.8
MAN_PAGES = $(MAN_CLI) $(MAN_DAEMON)
all: $(MAN_PAGES)

$(MAN_CLI): man/logcounter.1.in man/mkman.sh $(CLI)
	@mkdir -p $(@D)
	man/mkman.sh $(CLI) $< $(VERSION) > $@.tmp && mv $@.tmp $@
$(MAN_DAEMON): man/logcounterd.8.in man/mkman.sh $(DAEMON)
	@mkdir -p $(@D)
	man/mkman.sh $(DAEMON) $< $(VERSION) > $@.tmp && mv $@.tmp $@

.PHONY: install-man uninstall-man
install: install-man
install-man: $(MAN_PAGES)
	install -d $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man8
	install -m 644 $(MAN_CLI) $(DESTDIR)$(MANDIR)/man1/
	install -m 644 $(MAN_DAEMON) $(DESTDIR)$(MANDIR)/man8/
uninstall: uninstall-man
uninstall-man:
	rm -f $(DESTDIR)$(MANDIR)/man1/logcounter.1 $(DESTDIR)$(MANDIR)/man8/logcounterd.8
