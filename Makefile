# ctxstore — PGXS build of the extension from storage/, fdw/ and bgworker/.
#   make && make install        build and install into the pg_config in PATH
#   make -C storage check       engine unit tests (no server needed)
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
SHLIB_LINK  = $(ENGINE_LIB) -lzstd -lcurl -lcrypto -lpthread

# Track header dependencies (.deps/), so editing a header rebuilds the objects
# that include it; PGXS leaves this off unless PostgreSQL was configured with
# --enable-depend.
override autodepend = yes
# No LLVM bitcode: JIT-inlining an FDW's code buys nothing, and it doubles the
# build time.
override with_llvm = no

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# The inspection CLI, built from the same engine by storage/Makefile, is
# installed next to PostgreSQL's own programs.
INSPECT = storage/build/ctxstore-inspect

all: $(INSPECT)

# storage/Makefile knows the engine's sources and headers: always ask it,
# so that editing an engine file rebuilds the library and relinks.
$(shlib): $(ENGINE_LIB)
$(ENGINE_LIB) $(INSPECT): engine
engine:
	$(MAKE) -C storage build/libctxstore_storage.a build/ctxstore-inspect

install: install-inspect

install-inspect: $(INSPECT)
	$(INSTALL_PROGRAM) $(INSPECT) '$(DESTDIR)$(bindir)/ctxstore-inspect'

.PHONY: install-inspect engine
