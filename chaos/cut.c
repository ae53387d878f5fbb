/*
 * cut.c - the power cut: after the owner was SIGKILLed, its log directory
 * is cut back to what a power loss would have left, from the lines the
 * shim (powercut.c) recorded since the last cut.
 *
 * The model (the worst a POSIX file system may do, keeping the order of
 * directory operations, as journaling file systems do):
 *  - a file's data is durable up to the size it had when it was last
 *    fsync'ed or fdatasync'ed; the rest is cut off (a file never synced
 *    since the shim saw it created is cut to 0; files the shim never saw
 *    written are kept as they are);
 *  - a directory entry operation (create, rename, unlink) is durable only
 *    if its directory was fsync'ed after it; the others are undone, newest
 *    first: created files are deleted, renames are moved back (the file a
 *    rename replaced comes back from the shim's hard link), unlinked files
 *    come back from their hard links.
 * Afterwards the shim's record starts afresh: what is left is durable.
 */
#include "chaos.h"

#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct entry {
  char op;           /* C S D R U */
  char *a, *b, *bak; /* paths */
  int64_t len;
  int obj, old; /* file objects moved or replaced (replay) */
} entry;

typedef struct file_obj {
  int64_t durable; /* -1: unknown, keep as is */
} file_obj;

typedef struct cut {
  entry *e;
  size_t n, cap;
  file_obj *objs;
  size_t nobj, objcap;
  char **paths; /* path -> object, linear (a few hundred files) */
  int *pobj;
  size_t npaths, pcap;
} cut;

static int new_obj(cut *c, int64_t durable) {
  if (c->nobj == c->objcap) {
    c->objcap = c->objcap ? 2 * c->objcap : 64;
    c->objs = realloc(c->objs, c->objcap * sizeof *c->objs);
  }
  c->objs[c->nobj].durable = durable;
  return (int)c->nobj++;
}

static ssize_t find(cut *c, const char *path) {
  for (size_t i = 0; i < c->npaths; i++)
    if (strcmp(c->paths[i], path) == 0) return (ssize_t)i;
  return -1;
}

static int get(cut *c, const char *path) {
  ssize_t i = find(c, path);
  return i < 0 ? -1 : c->pobj[i];
}

static void put(cut *c, const char *path, int obj) {
  ssize_t i = find(c, path);
  if (obj < 0) {
    if (i >= 0) {
      free(c->paths[i]);
      c->paths[i] = c->paths[--c->npaths];
      c->pobj[i] = c->pobj[c->npaths];
    }
    return;
  }
  if (i < 0) {
    if (c->npaths == c->pcap) {
      c->pcap = c->pcap ? 2 * c->pcap : 64;
      c->paths = realloc(c->paths, c->pcap * sizeof *c->paths);
      c->pobj = realloc(c->pobj, c->pcap * sizeof *c->pobj);
    }
    i = (ssize_t)c->npaths++;
    c->paths[i] = strdup(path);
  }
  c->pobj[i] = obj;
}

static int obj_of(cut *c, const char *path) {
  int o = get(c, path);
  if (o < 0) {
    o = new_obj(c, -1);
    put(c, path, o);
  }
  return o;
}

static int parse(cut *c, const char *state) {
  FILE *f = fopen(state, "r");
  if (f == NULL) return errno == ENOENT ? 0 : -1;
  char line[3 * 4096 + 64];
  while (fgets(line, sizeof line, f)) {
    line[strcspn(line, "\n")] = '\0';
    char *save, *op = strtok_r(line, " ", &save);
    char *a = strtok_r(NULL, " ", &save), *b = strtok_r(NULL, " ", &save);
    char *d = strtok_r(NULL, " ", &save);
    if (!op || !a) continue;
    entry e = {.op = op[0], .a = strdup(a), .obj = -1, .old = -1};
    if (e.op == 'S') e.len = b ? atoll(b) : 0;
    if (e.op == 'R' || e.op == 'U') {
      if (!b || (e.op == 'R' && !d)) {
        free(e.a);
        continue;
      } /* torn */
      e.b = strdup(b);
      if (e.op == 'R') e.bak = strdup(d);
    }
    if (c->n == c->cap) {
      c->cap = c->cap ? 2 * c->cap : 1024;
      c->e = realloc(c->e, c->cap * sizeof *c->e);
    }
    c->e[c->n++] = e;
  }
  fclose(f);
  return 0;
}

static void dir_of(const char *path, char *out, size_t size) {
  snprintf(out, size, "%s", path);
  char *s = strrchr(out, '/');
  if (s) *s = '\0';
}

/* Is there a directory sync of path's directory after entry i? */
static bool synced_after(cut *c, size_t i, const char *path) {
  char dir[4096];
  dir_of(path, dir, sizeof dir);
  for (size_t j = i + 1; j < c->n; j++)
    if (c->e[j].op == 'D' && strcmp(c->e[j].a, dir) == 0) return true;
  return false;
}

int ch_cut_apply(const char *state, const char *bak, char *summary,
                 size_t size) {
  cut c = {0};
  if (parse(&c, state) != 0) {
    snprintf(summary, size, "cannot read %s", state);
    return -1;
  }
  /* forward: which file object each path holds */
  for (size_t i = 0; i < c.n; i++) {
    entry *e = &c.e[i];
    switch (e->op) {
    case 'C': put(&c, e->a, new_obj(&c, 0)); break;
    case 'S': c.objs[obj_of(&c, e->a)].durable = e->len; break;
    case 'R':
      e->obj = obj_of(&c, e->a);
      e->old = get(&c, e->b);
      put(&c, e->b, e->obj);
      put(&c, e->a, -1);
      break;
    case 'U':
      e->obj = obj_of(&c, e->a);
      put(&c, e->a, -1);
      break;
    }
  }
  /* backward: undo directory operations no directory sync covered */
  unsigned undone[3] = {0, 0, 0}, failed = 0;
  for (size_t i = c.n; i-- > 0;) {
    entry *e = &c.e[i];
    if (e->op == 'C' && !synced_after(&c, i, e->a)) {
      if (unlink(e->a) != 0 && errno != ENOENT) failed++;
      put(&c, e->a, -1);
      undone[0]++;
    } else if (e->op == 'R' && !synced_after(&c, i, e->b)) {
      if (rename(e->b, e->a) != 0) failed++;
      put(&c, e->a, e->obj);
      put(&c, e->b, -1);
      if (strcmp(e->bak, "-") != 0) {
        if (link(e->bak, e->b) != 0) failed++;
        put(&c, e->b, e->old >= 0 ? e->old : new_obj(&c, -1));
      }
      undone[1]++;
    } else if (e->op == 'U' && !synced_after(&c, i, e->a)) {
      if (strcmp(e->b, "-") == 0 || link(e->b, e->a) != 0) failed++;
      put(&c, e->a, e->obj);
      undone[2]++;
    }
  }
  /* data: cut each known file back to its durable size */
  unsigned cut_files = 0;
  long long cut_bytes = 0;
  for (size_t i = 0; i < c.npaths; i++) {
    int64_t d = c.objs[c.pobj[i]].durable;
    struct stat st;
    if (d < 0 || stat(c.paths[i], &st) != 0 || st.st_size <= d) continue;
    if (truncate(c.paths[i], d) != 0) {
      failed++;
      continue;
    }
    cut_files++;
    cut_bytes += st.st_size - d;
  }
  snprintf(summary, size,
           "undid %u creates, %u renames, %u unlinks; cut %u files by %lld "
           "bytes%s",
           undone[0], undone[1], undone[2], cut_files, cut_bytes,
           failed ? " (some steps failed)" : "");
  /* start afresh */
  int fd = open(state, O_WRONLY | O_TRUNC | O_CREAT | O_CLOEXEC, 0600);
  if (fd >= 0) close(fd);
  DIR *dir = opendir(bak);
  if (dir) {
    struct dirent *de;
    char p[4096];
    while ((de = readdir(dir)) != NULL) {
      if (de->d_name[0] == '.') continue;
      snprintf(p, sizeof p, "%s/%s", bak, de->d_name);
      unlink(p);
    }
    closedir(dir);
  }
  for (size_t i = 0; i < c.n; i++) {
    free(c.e[i].a);
    free(c.e[i].b);
    free(c.e[i].bak);
  }
  for (size_t i = 0; i < c.npaths; i++) free(c.paths[i]);
  free(c.e);
  free(c.objs);
  free(c.paths);
  free(c.pobj);
  return failed ? -1 : 0;
}
