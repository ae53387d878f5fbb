# mk/deb.mk - make deb: the Debian packages (logcounterd, liblogcounter6,
# liblogcounter-dev) from debian/, built with dpkg-buildpackage in a
# copy of the tracked files under $(BUILD)/deb/ (dpkg-buildpackage
# writes its .deb files beside the source tree); they land in
# $(BUILD)/deb/.  Needs debhelper, dpkg-dev and fakeroot (make deps
# installs them).  tests/suite_package.sh builds, lints, installs and runs
# them.
.PHONY: deb
deb:
	@tests/deps.sh debhelper dpkg-dev fakeroot lintian
	@BUILD=$(BUILD) tests/deb.sh
