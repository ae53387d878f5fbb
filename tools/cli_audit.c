/*
 * cli_audit.c - the logcounter subcommands that read the audit trail:
 * verify (records, ids, gaps and their causes, overlaps, the reservation)
 * and dump (every record and ledger entry, in value order).
 *
 * Both read snapshots of one counter's records and ledger (cli_trail.c)
 * and change nothing.  Corruption (an undecodable record or ledger entry,
 * values logged twice, a gap entry over logged values, a count that does
 * not match first..last) is reported and makes the exit status 1, and so
 * does a gap no ledger entry explains; explained gaps are normal after
 * failures and are only listed.  Both need the log, so cli_open refuses
 * them with --server.
 */
#include "cli.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* ----------------------------------------------------------------- verify */

struct verify_report {
  uint64_t records, ids, overlaps, undecodable, inconsistent;
  uint64_t gaps, missing, unexplained, unexplained_values;
  uint64_t causes[LC_GAP_CAUSE_MAX + 1];
  uint64_t voids, bad_entries, conflicts; /* the ledger */
  uint64_t open_segments, open_values;    /* left open by a crash */
  int64_t lowest, highest, reservation;
  /* the gaps listed (reason, detail unset): every one with --explain
   * (all), else the first MAX_GAPS_LISTED; cut: out of memory */
  struct trail_item *listed;
  size_t nlisted, cap;
  bool all, cut;
};

static void list_gap(struct verify_report *r, const struct trail_item *t) {
  if (!r->all && r->nlisted == MAX_GAPS_LISTED) return; /* the first ones */
  if (r->nlisted == r->cap) {
    size_t cap = r->cap ? 2 * r->cap : MAX_GAPS_LISTED;
    struct trail_item *p = realloc(r->listed, cap * sizeof *p);
    if (p == NULL) {
      r->cut = true;
      return;
    }
    r->listed = p;
    r->cap = cap;
  }
  r->listed[r->nlisted] = *t;
  r->listed[r->nlisted].reason = NULL;
  r->listed[r->nlisted++].detail = NULL;
}

static void verify_item(void *ctx, const struct trail_item *t) {
  struct verify_report *r = ctx;
  switch (t->kind) {
  case TRAIL_BAD:
    if (t->entry)
      r->bad_entries++;
    else
      r->undecodable++;
    return;
  case TRAIL_VOID:
    if (t->overlap)
      r->conflicts++;
    else
      r->voids++;
    return;
  case TRAIL_GAP:
    if (t->overlap) {
      r->conflicts++;
      return;
    }
    r->gaps++;
    r->missing += t->count;
    r->causes[t->cause]++;
    if (!t->cause) {
      r->unexplained++;
      r->unexplained_values += t->count;
    }
    list_gap(r, t);
    return;
  case TRAIL_RECORD: break;
  }
  if (t->first < 1 || t->last < t->first ||
      (uint64_t)(t->last - t->first) + 1 != t->count) {
    r->inconsistent++;
    return;
  }
  if (r->records++ == 0) r->lowest = t->first;
  if (t->version == LC_RECORD_SEGMENT_OPEN) {
    r->open_segments++;
    r->open_values += t->count;
  }
  r->ids += t->count;
  if (t->overlap) r->overlaps++;
  if (t->last > r->highest) r->highest = t->last;
}

static bool corrupt(const struct verify_report *r) {
  return r->undecodable || r->overlaps || r->inconsistent || r->bad_entries ||
         r->conflicts;
}

static bool verify_ok(const struct verify_report *r) {
  return !corrupt(r) && !r->unexplained;
}

static void print_verify_json(struct cli *c, const char *name,
                              const struct verify_report *r) {
  fputs("{\"counter\":", stdout);
  cli_put_json(stdout, name);
  printf(",\"ok\":%s,\"records\":%" PRIu64, verify_ok(r) ? "true" : "false",
         r->records);
  if (r->records)
    printf(",\"lowest\":%" PRId64 ",\"highest\":%" PRId64, r->lowest,
           r->highest);
  else
    fputs(",\"lowest\":null,\"highest\":null", stdout);
  printf(",\"ids\":%" PRIu64 ",\"gaps\":%" PRIu64 ",\"missing\":%" PRIu64
         ",\"gap_list\":[",
         r->ids, r->gaps, r->missing);
  for (size_t i = 0; i < r->nlisted; i++)
    printf("%s\"%" PRId64 "-%" PRId64 "\"", i ? "," : "", r->listed[i].first,
           r->listed[i].last);
  fputs("],\"gap_causes\":[", stdout);
  for (size_t i = 0; i < r->nlisted; i++)
    printf("%s\"%s\"", i ? "," : "", trail_kind(&r->listed[i]));
  printf("],\"unexplained\":%" PRIu64 ",\"unexplained_values\":%" PRIu64,
         r->unexplained, r->unexplained_values);
  fputs(",\"by_cause\":{", stdout);
  for (int k = LC_GAP_BURNED, n = 0; k <= LC_GAP_CAUSE_MAX; k++)
    if (k != LC_GAP_VOID) /* voids are counted apart */
      printf("%s\"%s\":%" PRIu64, n++ ? "," : "", lc_gap_cause_name(k),
             r->causes[k]);
  printf("},\"voids\":%" PRIu64 ",\"ledger_undecodable\":%" PRIu64
         ",\"ledger_conflicts\":%" PRIu64,
         r->voids, r->bad_entries, r->conflicts);
  printf(",\"open_segments\":%" PRIu64 ",\"open_segment_values\":%" PRIu64,
         r->open_segments, r->open_values);
  printf(",\"overlaps\":%" PRIu64 ",\"undecodable\":%" PRIu64
         ",\"inconsistent\":%" PRIu64 ",\"reservation\":%" PRId64 "}\n",
         r->overlaps, r->undecodable, r->inconsistent, r->reservation);
  (void)c;
}

static void print_verify(struct cli *c, const char *name,
                         const struct verify_report *r) {
  if (c->json) {
    print_verify_json(c, name, r);
    return;
  }
  printf("counter:      %s\n", name);
  printf("records:      %" PRIu64 "\n", r->records);
  if (r->records)
    printf("lowest:       %" PRId64 "\nhighest:      %" PRId64 "\n", r->lowest,
           r->highest);
  else
    printf("lowest:       -\nhighest:      -\n");
  printf("ids covered:  %" PRIu64 "\n", r->ids);
  printf("gaps:         %" PRIu64 " (%" PRIu64 " values never handed out)",
         r->gaps, r->missing);
  for (size_t i = 0; !r->all && i < r->nlisted; i++)
    printf("%s%" PRId64 "-%" PRId64, i ? " " : ": ", r->listed[i].first,
           r->listed[i].last);
  printf("%s\n", !r->all && r->gaps > r->nlisted ? " ..." : "");
  if (r->gaps) {
    printf("causes:      ");
    for (int k = 0; k <= LC_GAP_CAUSE_MAX; k++)
      if (k != LC_GAP_VOID && r->causes[k])
        printf(" %s %" PRIu64, k ? lc_gap_cause_name(k) : "unexplained",
               r->causes[k]);
    putchar('\n');
  }
  if (r->unexplained)
    printf("unexplained:  %" PRIu64 " gaps, %" PRIu64 " values (no ledger "
           "entry says why: a log from before the\n              ledger, or "
           "entries deleted)\n",
           r->unexplained, r->unexplained_values);
  if (r->voids) printf("voids:        %" PRIu64 "\n", r->voids);
  if (r->open_segments)
    printf("open segments: %" PRIu64 " prefetched, %" PRIu64 " values (a "
           "prefetch gap: held when the owner stopped without closing, so\n"
           "              some may never have been handed out; skipped, "
           "never reissued)\n",
           r->open_segments, r->open_values);
  printf("overlaps:     %" PRIu64 "%s\n", r->overlaps,
         r->overlaps ? " (values logged twice: CORRUPTION)" : "");
  printf("undecodable:  %" PRIu64 "\n", r->undecodable);
  if (r->inconsistent)
    printf("inconsistent: %" PRIu64 " (count does not match first..last)\n",
           r->inconsistent);
  if (r->bad_entries || r->conflicts)
    printf("ledger:       %" PRIu64 " undecodable, %" PRIu64 " over logged "
           "values (CORRUPTION)\n",
           r->bad_entries, r->conflicts);
  printf("reservation:  %" PRId64 "\n", r->reservation);
  printf("status:       %s\n", corrupt(r)       ? "CORRUPT"
                               : r->unexplained ? "UNEXPLAINED GAPS"
                                                : "ok");
  if (r->all) {
    for (size_t i = 0; i < r->nlisted; i++) trail_put_gap(c, &r->listed[i]);
    if (r->cut) printf("... (out of memory: list cut)\n");
  }
}

static int verify_option(struct cli *c, int opt, const char *arg, void *ctx) {
  (void)c;
  (void)arg;
  if (opt != 'x') return EXIT_USAGE;
  *(bool *)ctx = true;
  return 0;
}

int cmd_verify(struct cli *c, int argc, char **argv) {
  static const struct option lo[] = {{"explain", no_argument, NULL, 'x'},
                                     {"help", no_argument, NULL, 'h'},
                                     {"json", no_argument, NULL, 'J'},
                                     {NULL, 0, NULL, 0}};
  struct verify_report r;
  memset(&r, 0, sizeof r);
  const char *name;
  int npos, rc;
  if ((rc = cli_parse_args(c, argc, argv, "+:h", lo, verify_option, &r.all,
                           &name, 1, 1, &npos)) ||
      (rc = cli_check_name(c->cmd, name)) || (rc = cli_open(c)))
    return rc;
  if ((rc = trail_walk(c, name, verify_item, &r))) {
    free(r.listed);
    return cli_close(c, rc);
  }
  rc = lc_reservation(c->h, name, &r.reservation);
  if ((rc = cli_finish(c, rc, "read the reservation of '%s'", name))) {
    free(r.listed);
    return rc;
  }
  print_verify(c, name, &r);
  free(r.listed);
  return verify_ok(&r) ? 0 : EXIT_RUNTIME;
}

/* ------------------------------------------------------------------- dump */

struct dump_ctx {
  struct cli *c;
  uint64_t bad; /* undecodable records and entries */
};

static void dump_item(void *ctx, const struct trail_item *t) {
  struct dump_ctx *d = ctx;
  struct cli *c = d->c;
  if (ferror(stdout) || (t->kind == TRAIL_GAP && !t->cause)) return;
  if (t->kind == TRAIL_BAD) {
    d->bad++;
    const char *what = t->entry ? "ledger entry" : "record";
    if (c->json) {
      printf("{\"undecodable\":true,\"%s\":%" PRId64 ",\"detail\":",
             t->entry ? "ledger_key" : "key", t->last);
      cli_put_json(stdout, t->detail);
      fputs("}\n", stdout);
    } else {
      printf("# undecodable %s (key value %" PRId64 ")%s%s\n", what, t->last,
             *t->detail ? ": " : "", t->detail);
    }
    return;
  }
  if (t->kind != TRAIL_RECORD) {
    trail_put_gap(c, t);
    return;
  }
  char when[64];
  cli_format_time(t->time_us, when, sizeof when);
  const char *kind = trail_kind(t);
  bool block = t->version == LC_RECORD_BLOCK;
  if (c->json)
    printf("{\"first\":%" PRId64 ",\"last\":%" PRId64 ",\"count\":%" PRIu64
           ",\"time_us\":%" PRId64 ",\"time\":\"%s\",\"kind\":\"%s\"}\n",
           t->first, t->last, t->count, t->time_us, when, kind);
  else if (t->count == 1 && t->first == t->last)
    printf("%" PRId64 " 1 %s%s%s\n", t->first, when, block ? "" : " ",
           block ? "" : kind);
  else
    printf("%" PRId64 "-%" PRId64 " %" PRIu64 " %s%s%s\n", t->first, t->last,
           t->count, when, block ? "" : " ", block ? "" : kind);
}

int cmd_dump(struct cli *c, int argc, char **argv) {
  const char *name;
  int rc;
  if ((rc = cli_name_only(c, argc, argv, &name)) || (rc = cli_open(c)))
    return rc;
  struct dump_ctx d = {c, 0};
  if ((rc = trail_walk(c, name, dump_item, &d))) return cli_close(c, rc);
  if ((rc = cli_close(c, 0))) return rc;
  if (d.bad) {
    fprintf(stderr,
            PROG ": %" PRIu64 " undecodable record%s or ledger "
                 "entr%s in the log of '%s'\n",
            d.bad, d.bad == 1 ? "" : "s", d.bad == 1 ? "y" : "ies", name);
    return EXIT_RUNTIME;
  }
  return 0;
}
