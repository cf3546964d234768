# ctxstore — PGXS build of the extension from storage/, fdw/ and bgworker/.
#   make && make install        build and install into the pg_config in PATH
#   make -C storage check       engine unit tests (no server needed)
#   make installcheck           PostgreSQL-side tests (the block at the end)
#   scripts/test.sh             every test suite (what README and CI run)

MODULE_big = ctxstore
EXTENSION  = ctxstore
DATA       = ctxstore--0.1.sql
PGFILEDESC = "ctxstore - versioned agent-context store on object storage"

OBJS = $(patsubst %.c,%.o,$(sort $(wildcard shared/*.c fdw/*.c bgworker/*.c)))

# The engine is built on its own by storage/Makefile (-fPIC objects, header
# dependencies tracked there) and linked in; fdw/, bgworker/ and shared/ see
# it only through its public headers, storage/include/ctxstore/.  Of each
# other they see shared/ only: fdw/ and bgworker/ include their own headers
# by their own folder, never each other's (scripts/check-layers.sh).
ENGINE_LIB = storage/build/libctxstore_storage.a

PG_CPPFLAGS = -Istorage/include -Ishared
# -Wextra on top of PostgreSQL's own warning set.  PostgreSQL's headers and
# callback signatures trip -Wunused-parameter, -Wsign-compare and
# -Wmissing-field-initializers by design, so those three stay off here (the
# storage engine, built on its own by storage/Makefile, keeps all of -Wextra).
PG_CFLAGS   = -Wextra -Wno-unused-parameter -Wno-sign-compare -Wno-missing-field-initializers
SHLIB_LINK  = $(ENGINE_LIB) -lzstd -lz -ljansson -lavro -lcurl -lcrypto -lexpat -lpthread

# Track header dependencies (.deps/), so editing a header rebuilds the objects
# that include it; PGXS leaves this off unless PostgreSQL was configured with
# --enable-depend.
override autodepend = yes
# No LLVM bitcode: JIT-inlining an FDW's code buys nothing, and it doubles the
# build time.
override with_llvm = no

# Tests, the PGXS way (how they run: the block at the end of this file).
# Naming REGRESS or ISOLATION on the command line runs just the tests named;
# otherwise installcheck runs every regress test, isolation spec and TAP test.
# (Set with := so that none comes from the environment, and the PGXS ifdefs
# see an empty value as unset.)
TESTS_NAMED := $(filter command line,$(origin REGRESS) $(origin ISOLATION))
REGRESS   := $(if $(TESTS_NAMED),,$(basename $(notdir $(wildcard sql/*.sql))))
ISOLATION := $(if $(TESTS_NAMED),,$(basename $(notdir $(wildcard specs/*.spec))))
TAP_TESTS := $(if $(TESTS_NAMED),,1)
# nopreload_* tests check the extension without shared_preload_libraries, so
# they run in an instance of their own (installcheck-nopreload).
REGRESS_NOPRELOAD := $(filter nopreload_%,$(REGRESS))
override REGRESS  := $(filter-out nopreload_%,$(REGRESS))
# Everything the tests read and write: a copy of the inputs, the stores, the
# temporary instances and the results.  Store URIs appear in expected output,
# padded by psql to their width, so the directory's name has the length of
# scripts/test.sh's mktemp one; the suffix names the checkout, so that two
# checkouts never share it.
ifndef TEST_WORK
TEST_WORK := /tmp/ctxstore-test.$(shell printf %s '$(CURDIR)' | md5sum | cut -c1-6)
endif
REGRESS_PREP   = test-inputs
REGRESS_OPTS   = --inputdir='$(TEST_WORK)' --outputdir='$(TEST_WORK)/regress' \
	--temp-instance='$(TEST_WORK)/regress/instance' --temp-config='$(TEST_WORK)/regress.conf'
ISOLATION_OPTS = --inputdir='$(TEST_WORK)' --outputdir='$(TEST_WORK)/isolation' \
	--temp-instance='$(TEST_WORK)/isolation/instance' --temp-config='$(TEST_WORK)/regress.conf'

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# The inspection CLI, built from the same engine by storage/Makefile, is
# installed next to PostgreSQL's own programs.
INSPECT = storage/build/ctxstore-inspect

all: $(INSPECT)

# storage/Makefile knows the engine's sources and headers: always ask it,
# so that editing an engine file rebuilds the library and relinks.  The
# empty recipe makes make look at the library's time again after asking
# (without one, the first make after an engine change linked the old
# library's time and did not relink ctxstore.so).
$(shlib): $(ENGINE_LIB)
$(ENGINE_LIB) $(INSPECT): engine ;
# COPT (extra compiler flags, as PGXS takes them, e.g. -fsanitize=undefined
# for scripts/ubsan-regress.sh) reaches the engine too.
engine:
	$(MAKE) -C storage $(if $(COPT),CFLAGS="-O2 -g $(COPT)") build/libctxstore_storage.a build/ctxstore-inspect

install: install-inspect

install-inspect: $(INSPECT)
	$(INSTALL_PROGRAM) $(INSPECT) '$(DESTDIR)$(bindir)/ctxstore-inspect'

.PHONY: install-inspect engine

# ---- Tests against the installed build -------------------------------------
#   make installcheck                       every regress test, spec and TAP test
#   make installcheck REGRESS=scan          one regress test
#   make installcheck ISOLATION=read_your_writes     one isolation spec
#   make prove_installcheck PROVE_TESTS=t/040_memwal_crash.pl    one TAP test
#   make installcheck-regress, installcheck-isolation     one whole suite
# pg_regress and pg_isolation_regress start temporary instances with
# scripts/regress.conf (shared_preload_libraries = ctxstore); the TAP tests
# start their own clusters, with the object-store emulators that
# scripts/with-emulators.sh starts around the run.  The servers cannot run
# as root (initdb refuses), so as root the drivers run as TEST_USER through
# runuser (the emulators stay with the caller); they read only the copy of
# the inputs in TEST_WORK.
TEST_USER ?= postgres
TEST_AS = $(if $(filter 0,$(shell id -u)),runuser -u $(TEST_USER) --) env PATH="$(bindir):$$PATH"

pg_regress_installcheck = cd '$(TEST_WORK)' && $(TEST_AS) $(top_builddir)/src/test/regress/pg_regress \
	--bindir='$(bindir)' $(pg_regress_locale_flags) $(EXTRA_REGRESS_OPTS)
pg_isolation_regress_installcheck = cd '$(TEST_WORK)' && $(TEST_AS) $(top_builddir)/src/test/isolation/pg_isolation_regress \
	--bindir='$(bindir)' $(pg_regress_locale_flags) $(EXTRA_REGRESS_OPTS)
define prove_installcheck
cd '$(TEST_WORK)' && '$(CURDIR)/scripts/with-emulators.sh' $(TEST_AS) TESTDIR='$(TEST_WORK)' \
	PG_REGRESS='$(top_builddir)/src/test/regress/pg_regress' CTXSTORE_STORE_ROOT='$(TEST_WORK)/stores' \
	NODE_PATH='$(TEST_WORK)/readers/node_modules' \
	$(PROVE) -I '$(top_srcdir)/src/test/perl' -I t $(PROVE_FLAGS) $(or $(PROVE_TESTS),t/*.pl)
endef

test-inputs:
	'$(CURDIR)/scripts/test-inputs.sh' '$(TEST_WORK)' $(TEST_USER)

installcheck: installcheck-nopreload

installcheck-nopreload: test-inputs
ifneq ($(REGRESS_NOPRELOAD),)
	$(pg_regress_installcheck) --inputdir='$(TEST_WORK)' --outputdir='$(TEST_WORK)/nopreload' \
		--temp-instance='$(TEST_WORK)/nopreload/instance' $(REGRESS_NOPRELOAD)
endif

installcheck-regress:
	$(MAKE) installcheck REGRESS="$(REGRESS) $(REGRESS_NOPRELOAD)"

installcheck-isolation:
	$(MAKE) installcheck ISOLATION="$(ISOLATION)"

prove_installcheck: test-inputs
	$(prove_installcheck)

# cppcheck over every C file of ours, on the include paths the compiler
# uses (the engine's own, then the extension's sources with the server's
# headers), for x86-64 gcc: PostgreSQL's s_lock.h refuses any other
# platform.  Findings that are false positives are suppressed inline, saying
# why.
CPPCHECK_FLAGS = -q --enable=warning,performance,portability --inline-suppr --error-exitcode=1 \
	--std=c11 --platform=unix64 -D_GNU_SOURCE -D__x86_64__ \
	-D__GNUC__=$(shell $(CC) -dumpversion | cut -d. -f1) -j2

cppcheck:
	cd storage && cppcheck $(CPPCHECK_FLAGS) -I . -I include .
	cppcheck $(CPPCHECK_FLAGS) $(PG_CPPFLAGS) -I '$(includedir_server)' \
		$(patsubst %.o,%.c,$(filter-out storage/%,$(OBJS)))

.PHONY: cppcheck test-inputs installcheck-nopreload installcheck-regress installcheck-isolation prove_installcheck
