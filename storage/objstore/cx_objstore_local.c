/*
 * cx_objstore_local.c — the local-filesystem object-store backend.
 *
 * The object for key K is the file <root>/K.  Publishing is atomic and
 * durable: the bytes go to a file with no name yet, which is fsynced, then
 * given the final name, and finally the directory is fsynced.  So a name
 * never points at bytes that are not on disk, and the object is acknowledged
 * only once its directory entry is durable too.
 *
 * So a put-if-absent costs two fsyncs, and neither can go (a sealed group
 * commit whose generation travels inside its shard manifest is exactly one
 * such put): the inode's before the name, because a file system that does
 * not order data before the link (ext4 without a journal, or with
 * data=writeback) could otherwise leave after a power loss a name on an
 * empty or torn inode, which put-if-absent can never replace; the
 * directory's after the name, because until then an acknowledged commit's
 * name can vanish in a power loss.
 *
 *   put-if-absent  the bytes go to an unnamed inode (O_TMPFILE in the target
 *                  directory), which linkat() names through /proc/self/fd
 *                  (AT_SYMLINK_FOLLOW: AT_EMPTY_PATH would need
 *                  CAP_DAC_READ_SEARCH).  linkat() refuses an existing name
 *                  and changes nothing.  No temporary name is created or
 *                  removed, and a crash leaves nothing behind.  Where
 *                  O_TMPFILE is unsupported (the filesystem or kernel says
 *                  EOPNOTSUPP, EISDIR or EINVAL) or /proc/self/fd is not
 *                  there, the store falls back for good to the temporary-name
 *                  protocol below (link() also refuses an existing name);
 *   overwrite      a temporary name is written and fsynced, then renamed over
 *                  the final name (rename() cannot take an unnamed inode);
 *   hint           written over an object of the same size in place, with
 *                  no fsync (rewrite_hint), else as an overwrite.
 *
 * Temporary names are ".<base>.tmp.<16 hex digits>" (cx_layout.h); listings
 * skip them and keys whose last segment has that shape are refused.  A crash
 * can leave a temporary file behind, never a partial object.  A failure after
 * the name is published (the directory fsync) leaves the object in place:
 * like a timeout from a remote store, that outcome is ambiguous and the
 * commit protocol resolves it by reading the object back.
 *
 * Containment: every object, temporary file and directory is reached from
 * a descriptor of the root, one segment at a time, and no symbolic link
 * below the root is followed: openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)
 * where the kernel has it, else openat(O_NOFOLLOW | O_DIRECTORY) per segment
 * (the walk also makes missing directories, with mkdirat).  Files are then
 * named relative to their directory's descriptor.  The root's own path is the
 * operator's and may go through symlinks.  A symlink found below the root, an
 * object with more than one hard link (one planted in the store could name a
 * file outside it) and anything not a regular file are refused as
 * CX_ERR_CORRUPT.  So nothing outside the root is read, written or removed
 * whatever is planted inside it.  Objects the store writes always have one
 * link: put-if-absent without O_TMPFILE publishes with renameat2(
 * RENAME_NOREPLACE), and only where that is unsupported too with link() and
 * unlink() of the temporary name (a reader in between, or after a crash
 * there, sees two links and is refused until the temporary name goes).
 *
 * cx_obj_prepare_put() makes the next put-if-absent's unnamed inode ahead
 * (a spare, with its directory's descriptor: one per handle, SPARES_MAX in
 * the process), because making one can take as long as the put's fsyncs
 * (ext4 without a journal scans for inodes not recently freed); a put into
 * that directory takes it, and names it in the key's directory opened again
 * if the spare's went.  A spare is never freed to make another: an unnamed
 * inode can be named in any directory of its mount and project, so a new
 * spare takes the inode of one it replaces there (its handle's old one, or
 * the oldest when the table is full), and freeing inodes, which makes the
 * next ones slow to find, stays rare.
 *
 * Writes of an upload are gathered in a buffer of WBUF_SIZE bytes, so a
 * fragment written column chunk by column chunk costs a few write() calls,
 * not one per chunk; what is buffered is written before the fsync.
 *
 * The failpoint "local.no_tmpfile" (action error) makes the next put-if-
 * absent behave as if O_TMPFILE were unsupported, so tests cover the
 * fallback; "local.no_openat2" (action error) makes the store resolve paths
 * by the walk for good; "local.spare_project" (action error) makes the next
 * spare's directory read as of another project than every spare held, so
 * tests see a spare that cannot move.
 *
 * Error messages are bare reasons; cx_objstore.c adds "<op> <uri>/<key>".
 */
#include "objstore/cx_layout.h"
#include "objstore/cx_objstore.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/fs.h>
#include <linux/openat2.h>

#include "util/cx_failpoint.h"

/* Room for "/" + key + the temporary-name decoration in a PATH_MAX buffer. */
#define ROOT_MAX (PATH_MAX - CX_KEY_MAX - 64)

/* A temporary name: "." + a segment + the decoration. */
#define TMP_NAME_MAX (NAME_MAX + 64)

#define WBUF_SIZE 65536			/* an upload's write buffer */

typedef struct local_store
{
	cx_objstore base;
	char	   *root;			/* absolute, no trailing '/' ("" for "/") */
	bool		tmpfile;		/* put-if-absent may use O_TMPFILE */
	bool		openat2;		/* paths may be resolved by openat2() */
	bool		noreplace;		/* rename() may take RENAME_NOREPLACE */
} local_store;

/*
 * Unnamed inodes made ahead (cx_obj_prepare_put), each with the descriptor
 * of its directory (dir, a key prefix): at most one per handle and
 * SPARES_MAX in the process, oldest first, the oldest giving its inode to
 * a new one it can move to (else dropped), so that a process writing a
 * thousand stores in turn holds a few dozen descriptors for them, not
 * thousands, and frees no inode per put.  The seal pool's threads put to
 * different handles at once, hence the lock; no system call runs under it.
 */
#define SPARES_MAX 16

typedef struct spare_inode
{
	const local_store *owner;
	int			fd;
	int			dfd;			/* the directory dir, where it is linked */
	uint64_t	mount;			/* mount_of(dfd), which is fd's too */
	uint32_t	project;		/* project_of(fd) */
	char		dir[CX_KEY_MAX + 1];
} spare_inode;

static pthread_mutex_t spares_lock = PTHREAD_MUTEX_INITIALIZER;
static spare_inode spares[SPARES_MAX];
static int	nspares = 0;

typedef struct local_upload
{
	cx_upload	base;
	int			dfd;			/* the key's directory, -1 if not open */
	int			fd;				/* the file being written, -1 once closed */
	bool		anon;			/* fd is an unnamed (O_TMPFILE) inode */
	bool		spare;			/* ...made ahead, with dfd (the directory
								 * may have gone since) */
	const char *name;			/* final name in dfd: base.key's last segment */
	char		tmp[TMP_NAME_MAX];	/* temporary name in dfd, "" once gone or
									 * if anon */
	size_t		wlen;			/* bytes waiting in wbuf */
	uint8_t		wbuf[WBUF_SIZE];
} local_upload;

/* One listed object. */
typedef struct list_item
{
	char	   *key;
	uint64_t	size;
	int64_t		mtime_us;
} list_item;

typedef struct list_items
{
	bool		temporaries;	/* collect temporary files, not objects */
	list_item  *items;
	size_t		n;
	size_t		cap;
} list_items;

/* Directories still to scan, as key prefixes ending in '/' (or ""). */
typedef struct dir_queue
{
	char	  **dirs;
	size_t		head;
	size_t		n;
	size_t		cap;
} dir_queue;

static cx_code sys_fail(cx_err *err, int e, const char *fmt,...)
			__attribute__((format(printf, 3, 4)));

static cx_code
errno_code(int e)
{
	switch (e)
	{
		case ENOMEM:
			return CX_ERR_NOMEM;
		case EACCES:
		case EPERM:
			return CX_ERR_PERMISSION;
		case ENOSPC:
		case EDQUOT:
			return CX_ERR_NOSPACE;
		case EROFS:
			return CX_ERR_IO_PERMANENT;
		case ENAMETOOLONG:
		case ENOTDIR:
		case EISDIR:
			/* The key collides with the directory layout of other keys. */
			return CX_ERR_INVALID;
		default:
			return CX_ERR_IO;
	}
}

/* "<what>: <strerror>", with the code errno suggests. */
static cx_code
sys_fail(cx_err *err, int e, const char *fmt,...)
{
	char		what[CX_ERR_MSG_LEN];
	char		buf[128];
	va_list		ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	return cx_err_set(err, errno_code(e), "%s: %s", what,
					  strerror_r(e, buf, sizeof(buf)));
}

/* ENOTDIR means a prefix of the key is an object: the key is absent too. */
static bool
is_missing(int e)
{
	return e == ENOENT || e == ENOTDIR;
}

static cx_code
not_found(cx_err *err)
{
	char		buf[128];

	return cx_err_set(err, CX_ERR_NOT_FOUND, "%s",
					  strerror_r(ENOENT, buf, sizeof(buf)));
}

static const char *
base_name(const char *key)
{
	const char *slash = strrchr(key, '/');

	return slash ? slash + 1 : key;
}

/* Keys that look like temporary files would vanish from listings. */
static cx_code
check_not_reserved(const char *key, cx_err *err)
{
	if (cx_layout_is_temporary(key))
		return cx_err_set(err, CX_ERR_INVALID,
						  "names of the form .<name>.tmp.<16 hex digits> are reserved for temporary files");
	return CX_OK;
}

/* The directory part of an absolute path with no trailing '/'. */
static void
parent_dir(const char *path, char *parent)
{
	const char *slash = strrchr(path, '/');
	size_t		len = slash > path ? (size_t) (slash - path) : 1;

	memcpy(parent, path, len);
	parent[len] = '\0';
}

/* As in PostgreSQL: some filesystems cannot fsync a directory at all. */
static cx_code
fsync_dir_fd(int fd, const char *what, cx_err *err)
{
	if (fsync(fd) != 0 && errno != EINVAL && errno != EBADF)
		return sys_fail(err, errno, "fsync directory %s", what);
	return CX_OK;
}

static cx_code
fsync_dir(const char *dir, cx_err *err)
{
	int			fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	cx_code		rc;

	if (fd < 0)
		return sys_fail(err, errno, "open directory %s", dir);
	rc = fsync_dir_fd(fd, dir, err);
	close(fd);
	return rc;
}

/* mkdir() that reports errno, or 0 if the directory was created. */
static int
make_one_dir(const char *dir)
{
	return mkdir(dir, 0777) == 0 ? 0 : errno;
}

/*
 * mkdir -p of the root (above it, the paths are the operator's): climb to the
 * deepest ancestor that exists, then create each level on the way back down
 * (in place, so deep roots cost no stack).  Every level has its parent
 * fsynced: one we created needs its entry made durable, and one that turned
 * up meanwhile may come from a concurrent creator that has not fsynced it yet.
 */
static cx_code
make_dirs(const char *dir, cx_err *err)
{
	char		path[PATH_MAX];
	char		parent[PATH_MAX];
	size_t		len = strlen(dir);
	struct stat st;
	int			e;

	memcpy(path, dir, len + 1);
	while ((e = make_one_dir(path)) == ENOENT)
	{
		char	   *cut = strrchr(path, '/');

		if (cut == NULL || cut == path)
			break;
		*cut = '\0';
	}
	for (;;)
	{
		if (e == EEXIST && (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)))
			return cx_err_set(err, CX_ERR_INVALID,
							  "%s exists and is not a directory", path);
		if (e != 0 && e != EEXIST)
			return sys_fail(err, e, "create directory %s", path);
		parent_dir(path, parent);
		if (fsync_dir(parent, err) != CX_OK)
			return err->code;
		if (strlen(path) == len)
			return CX_OK;
		path[strlen(path)] = '/';	/* put back the next level's separator */
		e = make_one_dir(path);
	}
}

static cx_code
link_refused(const char *what, cx_err *err)
{
	return cx_err_set(err, CX_ERR_CORRUPT,
					  "%s is or goes through a symbolic link; below its root a store follows none",
					  what);
}

/*
 * Why a directory below the root could not be opened.  ENOENT and ENOTDIR
 * (a prefix of the key is an object) mean the key is absent; a write then
 * says why it cannot create it.
 */
static cx_code
dir_fail(int e, const char *dir, bool create, cx_err *err)
{
	if (e == ELOOP || e == EXDEV)
		return link_refused(dir, err);
	if (!create && (e == ENOENT || e == ENOTDIR))
		return not_found(err);
	if (e == ENOTDIR)
		return cx_err_set(err, CX_ERR_INVALID,
						  "a parent of this key is an object (is a key a prefix of another?)");
	return sys_fail(err, e, "open directory %s", dir);
}

/* The root directory; with create, made first if missing. */
static cx_code
open_root(const local_store *ls, bool create, int *out, cx_err *err)
{
	const char *root = ls->root[0] != '\0' ? ls->root : "/";
	int			flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC;

	*out = open(root, flags);
	if (*out < 0 && errno == ENOENT && create)
	{
		if (make_dirs(root, err) != CX_OK)
			return err->code;
		*out = open(root, flags);
	}
	if (*out < 0)
		return !create && errno == ENOENT ? not_found(err) :
			sys_fail(err, errno, "open store root %s", root);
	return CX_OK;
}

/* openat() of a directory, no symlink: ELOOP for one (not ENOTDIR). */
static int
open_dir_nofollow(int parent, const char *name)
{
	int			fd = openat(parent, name,
							O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;

	if (fd < 0 && errno == ENOTDIR &&
		fstatat(parent, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		S_ISLNK(st.st_mode))
		errno = ELOOP;
	return fd;
}

/*
 * Opens the directory called name in parent, never through a symlink; with
 * create, makes it if missing.  Its parent is fsynced if it was missing: we
 * made it, or a concurrent creator did and may not have fsynced it yet.
 */
static int
open_segment(int parent, const char *name, bool create)
{
	int			fd;

	if (strcmp(name, "..") == 0)
	{
		errno = EXDEV;			/* keys never have one: refused as an escape */
		return -1;
	}
	fd = open_dir_nofollow(parent, name);
	if (fd >= 0 || errno != ENOENT || !create)
		return fd;
	if (mkdirat(parent, name, 0777) != 0 && errno != EEXIST)
		return -1;
	if (fsync(parent) != 0 && errno != EINVAL)
		return -1;
	return open_dir_nofollow(parent, name);
}

/* Opens dir beneath rootfd (which it closes) one segment at a time. */
static cx_code
walk_dir(int rootfd, const char *dir, bool create, int *out, cx_err *err)
{
	char		seg[NAME_MAX + 1];
	const char *p = dir;
	int			fd = rootfd;

	while (*p != '\0')
	{
		size_t		len = strcspn(p, "/");
		int			next;

		if (len > NAME_MAX)
		{
			close(fd);
			return dir_fail(ENAMETOOLONG, dir, create, err);
		}
		memcpy(seg, p, len);
		seg[len] = '\0';
		next = open_segment(fd, seg, create);
		if (next < 0)
		{
			int			e = errno;

			close(fd);
			return dir_fail(e, dir, create, err);
		}
		close(fd);
		fd = next;
		p += len + (p[len] == '/');
	}
	*out = fd;
	return CX_OK;
}

/* openat2() beneath rootfd, no symlinks; -1 with errno as openat2 sets it. */
static int
openat2_beneath(int rootfd, const char *dir)
{
	struct open_how how = {
		.flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};

	return (int) syscall(SYS_openat2, rootfd, dir, &how, sizeof(how));
}

/*
 * Opens dir (a key prefix without its trailing '/', "" for the root) beneath
 * the root without following any symlink.  With create, missing levels are
 * made (the walk does that); without, a missing one is CX_ERR_NOT_FOUND.
 */
static cx_code
open_dir(local_store *ls, const char *dir, bool create, int *out, cx_err *err)
{
	int			rootfd;
	cx_err		injected;
	int			fd;

	if (open_root(ls, create, &rootfd, err) != CX_OK)
		return err->code;
	if (dir[0] == '\0')
	{
		*out = rootfd;
		return CX_OK;
	}
	if (ls->openat2 && CX_FAILPOINT("local.no_openat2", &injected) != CX_OK)
		ls->openat2 = false;
	if (!ls->openat2)
		return walk_dir(rootfd, dir, create, out, err);

	fd = openat2_beneath(rootfd, dir);
	/* No openat2 in this kernel, or a seccomp filter refuses it: for good. */
	if (fd < 0 && (errno == ENOSYS || errno == EPERM))
		ls->openat2 = false;
	if (fd < 0 && (!ls->openat2 || (errno == ENOENT && create)))
		return walk_dir(rootfd, dir, create, out, err);
	if (fd < 0)
	{
		int			e = errno;

		close(rootfd);
		return dir_fail(e, dir, create, err);
	}
	close(rootfd);
	*out = fd;
	return CX_OK;
}

/* The directory part of key ("" at the root) into dir; returns the key's
 * last segment. */
static const char *
key_dir(const char *key, char *dir)
{
	const char *name = base_name(key);

	snprintf(dir, CX_KEY_MAX + 1, "%.*s",
			 (int) (name > key ? name - key - 1 : 0), key);
	return name;
}

/* Opens the directory of key; *name is the key's last segment. */
static cx_code
open_key_dir(local_store *ls, const char *key, bool create, int *dfd,
			 const char **name, cx_err *err)
{
	char		dir[CX_KEY_MAX + 1];

	*name = key_dir(key, dir);
	return open_dir(ls, dir, create, dfd, err);
}

/*
 * What a read accepts as an object: a regular file with one link.  A
 * directory (of other keys) is no object.
 */
static cx_code
check_object(const struct stat *st, cx_err *err)
{
	if (S_ISDIR(st->st_mode))
		return not_found(err);
	if (S_ISLNK(st->st_mode))
		return link_refused("the object", err);
	if (!S_ISREG(st->st_mode))
		return cx_err_set(err, CX_ERR_CORRUPT, "not a regular file");
	if (st->st_nlink > 1)
		return cx_err_set(err, CX_ERR_CORRUPT,
						  "%lu hard links to this file; the store's objects have one, another may be outside the store",
						  (unsigned long) st->st_nlink);
	return CX_OK;
}

/* Creates the upload's temporary file in its directory. */
static cx_code
open_temp(local_upload *up, cx_err *err)
{
	uint8_t		rnd[CX_TEMP_RANDOM_LEN];
	int			flags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;

	if (cx_random_bytes(rnd, sizeof(rnd), err) != CX_OK)
		return err->code;
	cx_layout_temporary(up->name, rnd, up->tmp);

	up->fd = openat(up->dfd, up->tmp, flags, 0666);
	if (up->fd < 0)
	{
		sys_fail(err, errno, "create temporary file %s", up->tmp);
		up->tmp[0] = '\0';		/* not ours to remove */
		return err->code;
	}
	return CX_OK;
}

/* Does this errno from open(O_TMPFILE) mean "not supported here"? */
static bool
tmpfile_unsupported(int e)
{
	/* Kernels before 3.11 see O_TMPFILE as O_DIRECTORY: EISDIR. */
	return e == EOPNOTSUPP || e == EISDIR || e == EINVAL;
}

/*
 * Opens an unnamed inode in the upload's directory.  *unsupported says
 * O_TMPFILE cannot be used here (then nothing was opened and no error is set).
 */
static cx_code
open_anon(local_upload *up, bool *unsupported, cx_err *err)
{
	*unsupported = false;
	up->fd = openat(up->dfd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0666);
	if (up->fd >= 0)
	{
		up->anon = true;
		return CX_OK;
	}
	if (tmpfile_unsupported(errno))
	{
		*unsupported = true;
		return CX_OK;
	}
	return sys_fail(err, errno, "create unnamed file for %s", up->base.key);
}

/* Closes a spare's descriptors (never under spares_lock). */
static void
close_spare(const spare_inode *sp)
{
	if (sp->fd >= 0)
		close(sp->fd);
	if (sp->dfd >= 0)
		close(sp->dfd);
}

/* The index of owner's spare, in dir unless dir is NULL, or -1.  The caller
 * holds spares_lock. */
static int
find_spare_locked(const local_store *owner, const char *dir)
{
	for (int i = 0; i < nspares; i++)
		if (spares[i].owner == owner &&
			(dir == NULL || strcmp(spares[i].dir, dir) == 0))
			return i;
	return -1;
}

/* Takes spares[i] (-1: none, then fd -1) out of the table into *out.  The
 * caller holds spares_lock. */
static void
remove_spare_locked(int i, spare_inode *out)
{
	out->fd = out->dfd = -1;
	if (i < 0)
		return;
	*out = spares[i];
	memmove(&spares[i], &spares[i + 1], sizeof(spare_inode) * (nspares - i - 1));
	nspares--;
}

/* Drops owner's spare, if any. */
static void
drop_spare(const local_store *owner)
{
	spare_inode old;

	pthread_mutex_lock(&spares_lock);
	remove_spare_locked(find_spare_locked(owner, NULL), &old);
	pthread_mutex_unlock(&spares_lock);
	close_spare(&old);
}

/* Gives the upload its handle's spare if that was made for the key's
 * directory.  A spare made for another directory stays for its put. */
static bool
take_spare(local_store *ls, local_upload *up)
{
	char		dir[CX_KEY_MAX + 1];
	const char *name = key_dir(up->base.key, dir);
	spare_inode sp;

	pthread_mutex_lock(&spares_lock);
	remove_spare_locked(find_spare_locked(ls, dir), &sp);
	pthread_mutex_unlock(&spares_lock);
	if (sp.fd < 0)
		return false;
	up->dfd = sp.dfd;
	up->fd = sp.fd;
	up->anon = true;
	up->spare = true;
	up->name = name;
	return true;
}

/* Whether owner has a spare in dir already. */
static bool
has_spare(const local_store *owner, const char *dir)
{
	bool		has;

	pthread_mutex_lock(&spares_lock);
	has = find_spare_locked(owner, dir) >= 0;
	pthread_mutex_unlock(&spares_lock);
	return has;
}

/*
 * Where an unnamed inode can be linked: into a directory of the mount it was
 * made on (statx's mount id; 0 where the kernel does not say, and then no
 * inode moves), of its own project (ext4 and XFS refuse, with EXDEV, a link
 * into a directory that passes its project id on to new files when the ids
 * differ; a move is allowed only where they are equal, 0 where the file
 * system has none).
 */
static uint64_t
mount_of(int fd)
{
	struct statx stx;

	if (statx(fd, "", AT_EMPTY_PATH, STATX_MNT_ID, &stx) != 0 ||
		!(stx.stx_mask & STATX_MNT_ID))
		return 0;
	return stx.stx_mnt_id;
}

static uint32_t
project_of(int fd)
{
	struct fsxattr fsx;

	return ioctl(fd, FS_IOC_FSGETXATTR, &fsx) == 0 ? fsx.fsx_projid : 0;
}

/* Whether from's inode can be linked into to's directory. */
static bool
can_move(const spare_inode *from, const spare_inode *to)
{
	return from->mount == to->mount && from->project == to->project;
}

/*
 * An unnamed inode made earlier that sp's directory can take (same mount and
 * project), taken out of the table for owner's next spare: owner's own
 * spare made for another directory, else, with the table full, the oldest
 * such spare; -1 if none (the caller makes one).  Moving an inode rather
 * than closing one and making another matters where the file system avoids
 * recently freed inodes (ext4 without a journal scans past every inode
 * freed in the last minute): a writer of a thousand stores in turn would
 * otherwise free an inode per put.
 */
static int
reuse_spare_inode(const spare_inode *sp)
{
	spare_inode old;
	int			i;

	if (sp->mount == 0)
		return -1;
	pthread_mutex_lock(&spares_lock);
	i = find_spare_locked(sp->owner, NULL);
	if (i >= 0 && !can_move(&spares[i], sp))
		i = -1;
	for (int j = 0; i < 0 && nspares == SPARES_MAX && j < nspares; j++)
		if (can_move(&spares[j], sp))
			i = j;
	remove_spare_locked(i, &old);
	pthread_mutex_unlock(&spares_lock);
	if (old.dfd >= 0)
		close(old.dfd);
	return old.fd;
}

/* Enters sp as its owner's spare, replacing the owner's old one and, with
 * the table full, the oldest. */
static void
install_spare(const spare_inode *sp)
{
	spare_inode old;
	spare_inode evicted = {.fd = -1, .dfd = -1};

	pthread_mutex_lock(&spares_lock);
	remove_spare_locked(find_spare_locked(sp->owner, NULL), &old);
	if (nspares == SPARES_MAX)
		remove_spare_locked(0, &evicted);
	spares[nspares++] = *sp;
	pthread_mutex_unlock(&spares_lock);
	close_spare(&old);
	close_spare(&evicted);
}

/* cx_obj_prepare_put: the unnamed inode of the next put-if-absent into
 * key's directory, made now or moved from another spare.  Nothing on any
 * failure: the put makes its own then. */
static void
local_prepare_put(cx_objstore *s, const char *key)
{
	local_store *ls = (local_store *) s;
	spare_inode sp = {.owner = ls, .fd = -1, .dfd = -1};
	const char *name;
	cx_err		ignored;

	(void) key_dir(key, sp.dir);
	if (!ls->tmpfile || has_spare(ls, sp.dir))
		return;
	if (open_key_dir(ls, key, true, &sp.dfd, &name, &ignored) != CX_OK)
		return;
	sp.mount = mount_of(sp.dfd);
	/* A moved inode keeps its project: it must be the directory's. */
	sp.project = CX_FAILPOINT("local.spare_project", &ignored) != CX_OK ?
		UINT32_MAX : project_of(sp.dfd);
	sp.fd = reuse_spare_inode(&sp);
	if (sp.fd < 0)
	{
		sp.fd = openat(sp.dfd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0666);
		sp.project = sp.fd < 0 ? 0 : project_of(sp.fd);
	}
	if (sp.fd < 0)
	{
		close_spare(&sp);
		return;
	}
	install_spare(&sp);
}

/*
 * Opens the key's directory (making it if need be) and the file the upload
 * writes in it: the spare unnamed inode if one was made there, else
 * unnamed where possible, else temporary.
 */
static cx_code
open_upload_file(local_store *ls, local_upload *up, cx_err *err)
{
	bool		unsupported = false;
	cx_err		injected;
	int			injected_errno = CX_FAILPOINT_ERRNO("local.open_upload");

	if (injected_errno != 0)
		return sys_fail(err, injected_errno, "create the file for %s",
						up->base.key);
	if (up->base.mode == CX_PUT_IF_ABSENT && ls->tmpfile &&
		CX_FAILPOINT("local.no_tmpfile", &injected) != CX_OK)
		unsupported = true;
	else if (up->base.mode == CX_PUT_IF_ABSENT && take_spare(ls, up))
		return CX_OK;
	if (open_key_dir(ls, up->base.key, true, &up->dfd, &up->name, err) != CX_OK)
		return err->code;
	if (up->base.mode == CX_PUT_IF_ABSENT && ls->tmpfile)
	{
		if (!unsupported && open_anon(up, &unsupported, err) != CX_OK)
			return err->code;
		if (!unsupported)
			return CX_OK;
		/* For good: a filesystem does not learn O_TMPFILE later. */
		ls->tmpfile = false;
		drop_spare(ls);
	}
	return open_temp(up, err);
}

/* Closes and removes whatever the upload still holds, then frees it. */
static void
local_upload_abort(cx_upload *base)
{
	local_upload *up = (local_upload *) base;

	if (up->fd >= 0)
		close(up->fd);
	if (up->tmp[0] != '\0')
		unlinkat(up->dfd, up->tmp, 0);
	if (up->dfd >= 0)
		close(up->dfd);
	free(up);
}

static cx_code
local_upload_begin(cx_objstore *s, const char *key, cx_put_mode mode,
				   cx_upload **out, cx_err *err)
{
	local_store *ls = (local_store *) s;
	local_upload *up;

	if (check_not_reserved(key, err) != CX_OK)
		return err->code;
	/* Not calloc: the write buffer needs no zeroing. */
	up = malloc(sizeof(*up));
	if (up == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "out of memory");
	memset(up, 0, offsetof(local_upload, wbuf));
	up->base.store = s;
	snprintf(up->base.key, sizeof(up->base.key), "%s", key);
	up->base.mode = mode;
	up->base.written = 0;
	up->dfd = -1;
	up->fd = -1;
	if (open_upload_file(ls, up, err) != CX_OK)
	{
		local_upload_abort(&up->base);
		return err->code;
	}
	*out = &up->base;
	return CX_OK;
}

/* The name to put in messages about the file being written. */
static const char *
file_name(const local_upload *up)
{
	return up->anon ? "unnamed file" : up->tmp;
}

static cx_code
write_all(local_upload *up, const uint8_t *p, size_t len, cx_err *err)
{
	while (len > 0)
	{
		ssize_t		n = write(up->fd, p, len);

		if (n < 0)
		{
			if (errno == EINTR)
				continue;
			return sys_fail(err, errno, "write %s for %s", file_name(up),
							up->base.key);
		}
		p += n;
		len -= (size_t) n;
	}
	return CX_OK;
}

/* Writes out what the buffer holds. */
static cx_code
flush_wbuf(local_upload *up, cx_err *err)
{
	size_t		len = up->wlen;

	up->wlen = 0;
	return write_all(up, up->wbuf, len, err);
}

static cx_code
local_upload_write(cx_upload *base, const void *data, size_t len, cx_err *err)
{
	local_upload *up = (local_upload *) base;
	const uint8_t *p = data;

	if (len > WBUF_SIZE - up->wlen)
	{
		if (flush_wbuf(up, err) != CX_OK)
			return err->code;
		if (len >= WBUF_SIZE)
		{
			/* Large writes go straight through. */
			if (write_all(up, p, len, err) != CX_OK)
				return err->code;
			up->base.written += len;
			return CX_OK;
		}
	}
	memcpy(up->wbuf + up->wlen, p, len);
	up->wlen += len;
	up->base.written += len;
	return CX_OK;
}

/* Naming the file failed with EEXIST: an object, or a directory of keys? */
static cx_code
exists_fail(const local_upload *up, cx_err *err)
{
	struct stat st;

	if (fstatat(up->dfd, up->name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		S_ISDIR(st.st_mode))
		return cx_err_set(err, CX_ERR_INVALID,
						  "a directory has this name (is the key a prefix of another?)");
	return cx_err_set(err, CX_ERR_EXISTS, "object already exists");
}

/* linkat() of the upload's unnamed inode to its name: 0 or an errno. */
static int
link_anon(const local_upload *up, const char *proc)
{
	return linkat(AT_FDCWD, proc, up->dfd, up->name, AT_SYMLINK_FOLLOW) == 0 ?
		0 : errno;
}

/*
 * Names the unnamed inode: linkat() through /proc/self/fd.  The fd stays open
 * until the name exists (the /proc link needs it).
 */

static cx_code
publish_anon(local_upload *up, cx_err *err)
{
	char		proc[64];
	int			e;

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", up->fd);
	e = link_anon(up, proc);
	if (e == ENOENT && up->spare)
	{
		/* The directory the spare was made in is gone (removed, perhaps
		 * made again): the key's directory, opened as a put opens it, is
		 * on the same file system. */
		close(up->dfd);
		up->dfd = -1;
		if (open_key_dir((local_store *) up->base.store, up->base.key, true,
						 &up->dfd, &up->name, err) != CX_OK)
			return err->code;
		e = link_anon(up, proc);
	}
	if (e == EEXIST)
		return exists_fail(up, err);
	if (e != 0)
		return sys_fail(err, e, "link unnamed file to %s", up->name);

	/*
	 * The name is published and the bytes were fsynced before it: a failing
	 * close() cannot undo either, so it is not an error of the put.
	 */
	(void) close(up->fd);
	up->fd = -1;
	return CX_OK;
}

/*
 * Gives the temporary file the final name unless that exists.  Where the
 * filesystem has no RENAME_NOREPLACE, link() and unlink() do it, and the
 * object has two links in between.
 */
static cx_code
publish_if_absent(local_store *ls, local_upload *up, cx_err *err)
{
	if (ls->noreplace &&
		renameat2(up->dfd, up->tmp, up->dfd, up->name, RENAME_NOREPLACE) == 0)
		return CX_OK;
	if (ls->noreplace && errno != EINVAL)
		return errno == EEXIST ? exists_fail(up, err) :
			sys_fail(err, errno, "rename %s", up->tmp);
	ls->noreplace = false;
	if (linkat(up->dfd, up->tmp, up->dfd, up->name, 0) != 0)
		return errno == EEXIST ? exists_fail(up, err) :
			sys_fail(err, errno, "link %s", up->tmp);
	if (unlinkat(up->dfd, up->tmp, 0) != 0)
		return sys_fail(err, errno, "remove %s", up->tmp);
	return CX_OK;
}

/* Makes the written file the object; the caller then frees the upload. */
static cx_code
publish(local_upload *up, cx_err *err)
{
	local_store *ls = (local_store *) up->base.store;
	int			rc;

	if (up->wlen > 0 && flush_wbuf(up, err) != CX_OK)
		return err->code;
	/* The bytes must be on disk before the name can point at them. */
	if (fsync(up->fd) != 0)
		return sys_fail(err, errno, "fsync %s for %s", file_name(up),
						up->base.key);
	if (up->anon)
	{
		if (publish_anon(up, err) != CX_OK)
			return err->code;
		/* Like the rename below, durable only once the directory is. */
		return fsync_dir_fd(up->dfd, up->base.key, err);
	}
	rc = close(up->fd);
	up->fd = -1;
	if (rc != 0)
		return sys_fail(err, errno, "close %s", up->tmp);

	if (up->base.mode == CX_PUT_IF_ABSENT)
	{
		if (publish_if_absent(ls, up, err) != CX_OK)
			return err->code;
	}
	else if (renameat(up->dfd, up->tmp, up->dfd, up->name) != 0)
		return sys_fail(err, errno, "rename %s", up->tmp);
	up->tmp[0] = '\0';
	return fsync_dir_fd(up->dfd, up->base.key, err);
}

static cx_code
local_upload_finish(cx_upload *base, cx_err *err)
{
	local_upload *up = (local_upload *) base;
	cx_code		rc = publish(up, err);

	local_upload_abort(base);
	return rc;
}

/*
 * Opens key's object with flags.  O_NONBLOCK: a FIFO planted in the store
 * must not block the open (check_object then refuses it as no regular
 * file); a symlink in the object's place is refused; a missing object is
 * CX_ERR_NOT_FOUND.
 */
static cx_code
open_object(local_store *ls, const char *key, int flags, int *fd, cx_err *err)
{
	const char *name;
	int			dfd;
	int			e;

	if (open_key_dir(ls, key, false, &dfd, &name, err) != CX_OK)
		return err->code;
	*fd = openat(dfd, name, flags | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	e = errno;
	close(dfd);
	if (*fd < 0 && e == ELOOP)
		return link_refused("the object", err);
	if (*fd < 0)
		return is_missing(e) ? not_found(err) : sys_fail(err, e, "open");
	return CX_OK;
}

/*
 * A hint (CX_PUT_HINT) as large as the object there is written over it in
 * place: no new inode, no fsync, no rename.  That is what a hint may cost:
 * it need not survive a crash, and a reader finding it torn takes it for
 * no hint.  *done is false when there is no object of that size (the first
 * hint): it is then put as any overwrite is.
 */
static cx_code
rewrite_hint(local_store *ls, const char *key, const void *data, size_t len,
			 bool *done, cx_err *err)
{
	struct stat st;
	ssize_t		n;
	int			fd;
	cx_code		rc;

	*done = false;
	rc = open_object(ls, key, O_WRONLY, &fd, err);
	if (rc != CX_OK)
		return rc == CX_ERR_NOT_FOUND ? CX_OK : rc;
	if (fstat(fd, &st) != 0)
		rc = sys_fail(err, errno, "fstat");
	else
		rc = check_object(&st, err);
	if (rc == CX_OK && (uint64_t) st.st_size == len)
	{
		if ((n = pwrite(fd, data, len, 0)) < 0)
			rc = sys_fail(err, errno, "rewrite");
		else
			*done = (size_t) n == len;
	}
	close(fd);
	return rc;
}

static cx_code
local_put(cx_objstore *s, const char *key, const void *data, size_t len,
		  cx_put_mode mode, cx_err *err)
{
	cx_upload  *up;
	bool		done;

	if (mode == CX_PUT_HINT)
	{
		if (check_not_reserved(key, err) != CX_OK ||
			rewrite_hint((local_store *) s, key, data, len, &done, err) != CX_OK)
			return err->code;
		if (done)
			return CX_OK;
		mode = CX_PUT_OVERWRITE;
	}
	if (local_upload_begin(s, key, mode, &up, err) != CX_OK)
		return err->code;
	if (local_upload_write(up, data, len, err) != CX_OK)
	{
		local_upload_abort(up);
		return err->code;
	}
	return local_upload_finish(up, err);
}

/* Appends up to len bytes from offset; stops early at the end of the file. */
static cx_code
read_range(int fd, uint64_t offset, size_t len, cx_buf *out, cx_err *err)
{
	struct stat st;
	uint64_t	size;
	size_t		want;
	size_t		got = 0;

	if (fstat(fd, &st) != 0)
		return sys_fail(err, errno, "fstat");
	if (check_object(&st, err) != CX_OK)
		return err->code;
	size = (uint64_t) st.st_size;
	if (offset >= size)
		return CX_OK;
	want = size - offset < len ? (size_t) (size - offset) : len;
	if (!cx_buf_reserve(out, want))
		return cx_err_set(err, CX_ERR_NOMEM, "out of memory reading %zu bytes",
						  want);
	while (got < want)
	{
		ssize_t		n = pread(fd, out->data + out->len, want - got,
							  (off_t) (offset + got));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return sys_fail(err, errno, "read");
		if (n == 0)
			break;				/* shrank under us; return what there was */
		got += (size_t) n;
		out->len += (size_t) n;
	}
	return CX_OK;
}

static cx_code
local_get(cx_objstore *s, const char *key, uint64_t offset, size_t len,
		  cx_buf *out, cx_err *err)
{
	int			fd;
	cx_code		rc;

	if (check_not_reserved(key, err) != CX_OK ||
		open_object((local_store *) s, key, O_RDONLY, &fd, err) != CX_OK)
		return err->code;
	rc = read_range(fd, offset, len, out, err);
	close(fd);
	return rc;
}

static int64_t
stat_mtime_us(const struct stat *st)
{
	return (int64_t) st->st_mtim.tv_sec * 1000000 + st->st_mtim.tv_nsec / 1000;
}

static cx_code
local_head(cx_objstore *s, const char *key, uint64_t *size, int64_t *mtime_us,
		   cx_err *err)
{
	const char *name;
	struct stat st;
	int			dfd;
	int			rc;

	if (check_not_reserved(key, err) != CX_OK)
		return err->code;
	if (open_key_dir((local_store *) s, key, false, &dfd, &name, err) != CX_OK)
		return err->code;
	rc = fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW);
	if (rc != 0)
		rc = errno;
	close(dfd);
	if (rc != 0)
		return is_missing(rc) ? not_found(err) : sys_fail(err, rc, "stat");
	if (check_object(&st, err) != CX_OK)
		return err->code;
	*size = (uint64_t) st.st_size;
	if (mtime_us != NULL)
		*mtime_us = stat_mtime_us(&st);
	return CX_OK;
}

/*
 * The directory entry is fsynced so that a delete, once returned, is not
 * undone by a crash: callers delete only objects nothing references, but a
 * resurrected object would still surprise the next listing.  A symlink in
 * the key's place is removed, never what it points at.
 */
static cx_code
local_del(cx_objstore *s, const char *key, cx_err *err)
{
	const char *name;
	int			dfd;
	cx_code		rc;

	if (check_not_reserved(key, err) != CX_OK)
		return err->code;
	rc = open_key_dir((local_store *) s, key, false, &dfd, &name, err);
	if (rc == CX_ERR_NOT_FOUND)
		return CX_OK;
	if (rc != CX_OK)
		return rc;
	if (unlinkat(dfd, name, 0) != 0)
	{
		/* Linux reports a directory as EISDIR: no object has that name. */
		if (is_missing(errno) || errno == EISDIR)
			rc = CX_OK;
		else
			rc = sys_fail(err, errno, "remove");
	}
	else
		rc = fsync_dir_fd(dfd, key, err);
	close(dfd);
	return rc;
}

/* Makes room for one more element; returns the (moved) array or NULL. */
static void *
grow_array(void *items, size_t *cap, size_t n, size_t size)
{
	size_t		newcap;
	void	   *p;

	if (n < *cap)
		return items;
	newcap = *cap ? *cap * 2 : 64;
	p = realloc(items, newcap * size);
	if (p != NULL)
		*cap = newcap;
	return p;
}

static cx_code
add_item(list_items *l, const char *key, const struct stat *st, cx_err *err)
{
	list_item  *items = grow_array(l->items, &l->cap, l->n, sizeof(list_item));
	char	   *copy;

	if (items == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "out of memory listing");
	l->items = items;
	copy = cx_strdup(key);
	if (copy == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "out of memory listing");
	l->items[l->n].key = copy;
	l->items[l->n].size = (uint64_t) st->st_size;
	l->items[l->n].mtime_us = stat_mtime_us(st);
	l->n++;
	return CX_OK;
}

static cx_code
queue_dir(dir_queue *q, const char *dir, cx_err *err)
{
	char	  **dirs = grow_array(q->dirs, &q->cap, q->n, sizeof(char *));
	char	   *copy;

	if (dirs == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "out of memory listing");
	q->dirs = dirs;
	copy = cx_strdup(dir);
	if (copy == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "out of memory listing");
	q->dirs[q->n++] = copy;
	return CX_OK;
}

/*
 * Looks at one directory entry: a regular file whose name is a valid key is
 * listed (a temporary file only when l collects them, and then nothing
 * else), a directory is queued for scanning, anything else (symlinks, files
 * no key could name) is none of ours.
 */
static cx_code
scan_entry(int dfd, const char *dir, const char *name, list_items *l,
		   dir_queue *q, cx_err *err)
{
	char		key[PATH_MAX];
	struct stat st;
	cx_err		scratch;

	/* dir is a valid key plus '/', name at most NAME_MAX: key has room.
	 * Validation also drops "." and "..". */
	snprintf(key, sizeof(key), "%s%s", dir, name);
	if (cx_key_validate(key, &scratch) != CX_OK)
		return CX_OK;
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
		return is_missing(errno) ? CX_OK : sys_fail(err, errno, "stat %s", key);
	if (S_ISDIR(st.st_mode))
	{
		strcat(key, "/");
		return queue_dir(q, key, err);
	}
	if (S_ISREG(st.st_mode) && cx_layout_is_temporary(name) == l->temporaries)
		return add_item(l, key, &st, err);
	return CX_OK;
}

/* Scans one directory (a key prefix ending in '/', or "" for the root),
 * keeping entries whose names start with name_prefix. */
static cx_code
scan_dir(local_store *ls, const char *dir, const char *name_prefix,
		 list_items *l, dir_queue *q, cx_err *err)
{
	char		path[PATH_MAX];
	size_t		plen = strlen(name_prefix);
	int			fd;
	DIR		   *d;
	struct dirent *de;
	cx_code		rc = CX_OK;

	snprintf(path, sizeof(path), "%.*s", (int) (strlen(dir) - (dir[0] != '\0')), dir);
	rc = open_dir(ls, path, false, &fd, err);
	if (rc != CX_OK)
		return rc == CX_ERR_NOT_FOUND ? CX_OK : rc;
	d = fdopendir(fd);
	if (d == NULL)
	{
		int			e = errno;

		close(fd);
		return sys_fail(err, e, "open directory %s", path);
	}
	for (;;)
	{
		errno = 0;
		de = readdir(d);
		if (de == NULL)
		{
			if (errno != 0)
				rc = sys_fail(err, errno, "read directory %s", path);
			break;
		}
		if (strncmp(de->d_name, name_prefix, plen) != 0)
			continue;
		rc = scan_entry(fd, dir, de->d_name, l, q, err);
		if (rc != CX_OK)
			break;
	}
	closedir(d);
	return rc;
}

static int
item_cmp(const void *a, const void *b)
{
	return strcmp(((const list_item *) a)->key, ((const list_item *) b)->key);
}

static void
list_items_free(list_items *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->items[i].key);
	free(l->items);
}

/*
 * The prefix splits into the directory that holds every match ("a/b/") and
 * a name prefix within it ("c").  That directory's matching subdirectories,
 * and everything under them, are scanned breadth-first through a queue so
 * that deep trees cost heap, not stack.  Keys are collected into l (objects,
 * or temporary files as l->temporaries says) and sorted.
 */
static cx_code
collect(local_store *ls, const char *prefix, list_items *l, cx_err *err)
{
	const char *name = base_name(prefix);
	char		dir[CX_KEY_MAX + 2];
	dir_queue	q = {0};
	cx_code		rc;

	snprintf(dir, sizeof(dir), "%.*s", (int) (name - prefix), prefix);
	rc = scan_dir(ls, dir, name, l, &q, err);
	for (; rc == CX_OK && q.head < q.n; q.head++)
		rc = scan_dir(ls, q.dirs[q.head], "", l, &q, err);
	/* qsort's array may not be NULL, even with no elements. */
	if (rc == CX_OK && l->n > 0)
		qsort(l->items, l->n, sizeof(list_item), item_cmp);
	for (size_t i = 0; i < q.n; i++)
		free(q.dirs[i]);
	free(q.dirs);
	return rc;
}

static cx_code
local_list(cx_objstore *s, const char *prefix, cx_list_entry_fn fn,
		   void *arg, cx_err *err)
{
	list_items	l = {.temporaries = false};
	cx_code		rc = collect((local_store *) s, prefix, &l, err);

	for (size_t i = 0; rc == CX_OK && i < l.n; i++)
	{
		cx_list_entry e = {l.items[i].key, l.items[i].size,
		l.items[i].mtime_us};

		if (!fn(arg, &e))
			break;
	}
	list_items_free(&l);
	return rc;
}

/* Removes a temporary file (gone already is fine: its upload finished). */
static cx_code
remove_temporary(local_store *ls, const char *key, cx_err *err)
{
	const char *name;
	int			dfd;
	cx_code		rc = open_key_dir(ls, key, false, &dfd, &name, err);

	if (rc != CX_OK)
		return rc == CX_ERR_NOT_FOUND ? CX_OK : rc;
	if (unlinkat(dfd, name, 0) != 0)
		rc = is_missing(errno) ? CX_OK : sys_fail(err, errno, "remove %s", key);
	else
		rc = fsync_dir_fd(dfd, key, err);
	close(dfd);
	return rc;
}

/* A crash between creating an upload's temporary file and publishing it
 * leaves the file; nothing else ever removes it. */
static cx_code
local_sweep_temporaries(cx_objstore *s, const char *prefix,
						int64_t older_than_us, bool dry, cx_list_entry_fn fn,
						void *arg, cx_err *err)
{
	local_store *ls = (local_store *) s;
	list_items	l = {.temporaries = true};
	cx_code		rc = collect(ls, prefix, &l, err);

	for (size_t i = 0; rc == CX_OK && i < l.n; i++)
	{
		cx_list_entry e = {l.items[i].key, l.items[i].size,
		l.items[i].mtime_us};

		if (e.mtime_us >= older_than_us)
			continue;
		if (!dry)
			rc = remove_temporary(ls, e.key, err);
		if (rc == CX_OK && !fn(arg, &e))
			break;
	}
	list_items_free(&l);
	return rc;
}

static void
local_close(cx_objstore *s)
{
	local_store *ls = (local_store *) s;

	drop_spare(ls);
	free(ls->root);
	free(ls->base.uri);
	free(ls);
}

static const cx_objstore_ops local_ops = {
	.put = local_put,
	.get = local_get,
	.head = local_head,
	.list = local_list,
	.sweep_temporaries = local_sweep_temporaries,
	.del = local_del,
	.upload_begin = local_upload_begin,
	.upload_write = local_upload_write,
	.upload_finish = local_upload_finish,
	.upload_abort = local_upload_abort,
	.prepare_put = local_prepare_put,
	.close = local_close,
};

cx_code
cx_objstore_open_local(const char *root, cx_objstore **out, cx_err *err)
{
	local_store *ls;
	size_t		len;

	*out = NULL;
	if (root == NULL || root[0] != '/')
		return cx_err_set(err, CX_ERR_INVALID,
						  "store root \"%s\" is not an absolute path",
						  root ? root : "");
	len = strlen(root);
	while (len > 0 && root[len - 1] == '/')
		len--;
	if (len > ROOT_MAX)
		return cx_err_set(err, CX_ERR_INVALID,
						  "store root is %zu bytes long, more than %d",
						  len, ROOT_MAX);

	ls = calloc(1, sizeof(*ls));
	if (ls == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "out of memory");
	ls->root = strndup(root, len);
	ls->base.uri = malloc(len + sizeof("file:///"));
	if (ls->root == NULL || ls->base.uri == NULL)
	{
		local_close(&ls->base);
		return cx_err_set(err, CX_ERR_NOMEM, "out of memory");
	}
	sprintf(ls->base.uri, "file://%s", len > 0 ? ls->root : "/");
	ls->base.ops = &local_ops;
	/* Without /proc, an unnamed file could not be given its name. */
	ls->tmpfile = access("/proc/self/fd", X_OK) == 0;
	ls->openat2 = true;
	ls->noreplace = true;
	*out = &ls->base;
	return CX_OK;
}
