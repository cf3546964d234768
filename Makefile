# ctxstore — PGXS build of the extension from storage/, fdw/ and bgworker/.
#   make && make install        build and install into the pg_config in PATH
#   make -C storage check       engine unit tests (no server needed)
#   scripts/test.sh             every test suite (what README and CI run)

MODULE_big = ctxstore
EXTENSION  = ctxstore
DATA       = ctxstore--0.1.sql
PGFILEDESC = "ctxstore - versioned agent-context store on object storage"

STORAGE_LAYERS = util objstore format table memwal merge scan
OBJS = $(patsubst %.c,%.o,$(sort $(foreach d,$(STORAGE_LAYERS),$(wildcard storage/$(d)/cx_*.c)) \
	$(wildcard fdw/*.c bgworker/*.c)))

PG_CPPFLAGS = -Istorage/include -Istorage -Ifdw -Ibgworker
# -Wextra on top of PostgreSQL's own warning set.  PostgreSQL's headers and
# callback signatures trip -Wunused-parameter, -Wsign-compare and
# -Wmissing-field-initializers by design, so those three stay off here (the
# storage engine, built on its own by storage/Makefile, keeps all of -Wextra).
PG_CFLAGS   = -Wextra -Wno-unused-parameter -Wno-sign-compare -Wno-missing-field-initializers
SHLIB_LINK  = -lzstd -lcurl -lcrypto -lpthread

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

# The inspection CLI, built from the same engine sources by storage/Makefile,
# is installed next to PostgreSQL's own programs.
INSPECT = storage/build/ctxstore-inspect

all: $(INSPECT)

$(INSPECT): $(wildcard storage/*/*.c storage/*/*.h)
	$(MAKE) -C storage build/ctxstore-inspect

install: install-inspect

install-inspect: $(INSPECT)
	$(INSTALL_PROGRAM) $(INSPECT) '$(DESTDIR)$(bindir)/ctxstore-inspect'

.PHONY: install-inspect
