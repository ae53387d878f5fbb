/*
 * cli_trail.c - a counter's audit trail for verify, dump and gaps: its
 * records and its ledger entries (gaps and voids), merged in value order,
 * with the holes between them that no ledger entry explains.
 *
 * Everything is read from two lc_iter snapshots; nothing is changed.
 */
#include "cli.h"

#include <inttypes.h>
#include <string.h>

/* One side of the merge: the item read ahead, and its detail (the next
 * lc_ call overwrites lc_last_detail). */
struct side {
  lc_iter *it;
  int rc; /* 1, 0 (the end), LC_ECORRUPT or another error */
  char detail[256];
};

static void advance_records(struct side *s, lc_record *rec) {
  s->rc = lc_iter_next(s->it, rec);
  snprintf(s->detail, sizeof s->detail, "%s", lc_last_detail());
}

static void advance_ledger(struct side *s, lc_gap *gap) {
  s->rc = lc_ledger_next(s->it, gap);
  snprintf(s->detail, sizeof s->detail, "%s", lc_last_detail());
}

/* A read error other than a corrupt item ends the walk. */
static int read_failed(const struct side *s) {
  return s->rc < 0 && s->rc != LC_ECORRUPT;
}

/* Value order: an undecodable item sorts by its key's value. */
static int64_t record_key(const struct side *s, const lc_record *r) {
  return s->rc == 1 ? r->first : r->last;
}

static int64_t entry_key(const struct side *s, const lc_gap *g) {
  return s->rc == 1 ? g->first : g->last;
}

/* Emits the hole prev+1..to as unexplained, when there is one. */
static void hole(trail_fn fn, void *ctx, int64_t prev, int64_t to) {
  if (prev > 0 && to > prev) {
    struct trail_item t = {.kind = TRAIL_GAP,
                           .first = prev + 1,
                           .last = to,
                           .count = (uint64_t)(to - prev)};
    fn(ctx, &t);
  }
}

static void on_record(trail_fn fn, void *ctx, const struct side *s,
                      const lc_record *r, int64_t *prev) {
  struct trail_item t = {.kind = TRAIL_RECORD,
                         .first = r->first,
                         .last = r->last,
                         .count = r->count,
                         .time_us = r->time_us,
                         .version = r->version,
                         .detail = s->detail};
  if (s->rc != 1) {
    t.kind = TRAIL_BAD;
  } else if (*prev && r->first <= *prev) {
    t.overlap = true;
  } else {
    hole(fn, ctx, *prev, r->first - 1);
  }
  fn(ctx, &t);
  if (r->last > *prev) *prev = r->last;
}

static void on_entry(trail_fn fn, void *ctx, const struct side *s,
                     const lc_gap *g, int64_t *prev) {
  struct trail_item t = {.kind = TRAIL_GAP,
                         .first = g->first,
                         .last = g->last,
                         .count = (uint64_t)(g->last - g->first) + 1,
                         .cause = g->cause,
                         .time_us = g->time_us,
                         .reason = g->reason,
                         .detail = s->detail};
  if (s->rc != 1) {
    t.kind = TRAIL_BAD;
    t.entry = true;
  } else if (g->cause == LC_GAP_VOID) {
    t.kind = TRAIL_VOID;
    t.overlap = g->first > *prev; /* a void lies inside a record */
  } else if (*prev && g->first <= *prev) {
    t.overlap = true; /* a gap over values logged */
  } else {
    hole(fn, ctx, *prev, g->first - 1);
  }
  fn(ctx, &t);
  if (t.kind != TRAIL_VOID && g->last > *prev) *prev = g->last;
}

int trail_walk(struct cli *c, const char *name, trail_fn fn, void *ctx) {
  struct side rs = {0}, ls = {0};
  lc_record rec;
  lc_gap gap;
  memset(&rec, 0, sizeof rec);
  memset(&gap, 0, sizeof gap);
  int rc = lc_iter_open(c->h, name, &rs.it);
  if (!rc && (rc = lc_ledger_open(c->h, name, &ls.it)) != 0)
    lc_iter_close(rs.it);
  if (rc) return cli_runtime_error(rc, "read the log of '%s'", name);
  advance_records(&rs, &rec);
  advance_ledger(&ls, &gap);
  int64_t prev = 0;
  while ((rs.rc || ls.rc) && !read_failed(&rs) && !read_failed(&ls)) {
    if (rs.rc && (!ls.rc || record_key(&rs, &rec) <= entry_key(&ls, &gap))) {
      on_record(fn, ctx, &rs, &rec, &prev);
      advance_records(&rs, &rec);
    } else {
      on_entry(fn, ctx, &ls, &gap, &prev);
      advance_ledger(&ls, &gap);
    }
  }
  const struct side *bad = read_failed(&rs)   ? &rs
                           : read_failed(&ls) ? &ls
                                              : NULL;
  int status = 0;
  if (bad) {
    fprintf(stderr, PROG ": cannot read the log of '%s': %s (%s)\n", name,
            lc_strerror(bad->rc), bad->detail);
    status = EXIT_RUNTIME;
  }
  lc_iter_close(rs.it);
  lc_iter_close(ls.it);
  return status;
}

const char *trail_kind(const struct trail_item *t) {
  if (t->kind == TRAIL_RECORD)
    return t->version == LC_RECORD_SEGMENT_OPEN ? "segment-open"
           : t->version == LC_RECORD_SEGMENT    ? "segment"
                                                : "block";
  if (t->kind == TRAIL_VOID) return "void";
  return t->cause ? lc_gap_cause_name(t->cause) : "unexplained";
}

void trail_put_gap(struct cli *c, const struct trail_item *t) {
  char when[64] = "-";
  if (t->time_us && (t->kind != TRAIL_GAP || t->cause))
    cli_format_time(t->time_us, when, sizeof when);
  if (c->json) {
    printf("{\"first\":%" PRId64 ",\"last\":%" PRId64 ",\"count\":%" PRIu64
           ",\"cause\":\"%s\"",
           t->first, t->last, t->count, trail_kind(t));
    if (strcmp(when, "-") != 0)
      printf(",\"time_us\":%" PRId64 ",\"time\":\"%s\"", t->time_us, when);
    if (t->reason && *t->reason) {
      fputs(",\"reason\":", stdout);
      cli_put_json(stdout, t->reason);
    }
    fputs("}\n", stdout);
    return;
  }
  if (t->count == 1)
    printf("%" PRId64 " 1 %s %s", t->first, when, trail_kind(t));
  else
    printf("%" PRId64 "-%" PRId64 " %" PRIu64 " %s %s", t->first, t->last,
           t->count, when, trail_kind(t));
  if (t->reason && *t->reason) {
    putchar(' ');
    cli_put_escaped(stdout, t->reason);
  }
  putchar('\n');
}
