/*
 * cli_audit.c - the logcounter subcommands that read the audit trail:
 * verify (records, ids, gaps, overlaps, the reservation) and dump (every
 * record, oldest first).
 *
 * Both read a snapshot of one counter's records through lc_iter and
 * change nothing.  Corruption (an undecodable record, values logged twice,
 * a count that does not match first..last) is reported and makes the exit
 * status 1; gaps are normal after failures and are only listed.  Both need
 * the log, so cli_open refuses them with --server.
 */
#include "cli.h"

#include <inttypes.h>
#include <string.h>

/* ----------------------------------------------------------------- verify */

struct verify_report {
  uint64_t records, ids, gaps, missing, overlaps, undecodable, inconsistent;
  uint64_t open_segments, open_values;  /* left open by a crash */
  int64_t lowest, highest, reservation;
  int64_t gap_from[MAX_GAPS_LISTED], gap_to[MAX_GAPS_LISTED];
};

/* Adds one record to the report; prev_last is the highest value seen so
 * far (0: none yet). */
static void verify_record(struct verify_report *r, const lc_record *rec,
                          int64_t *prev_last) {
  if (rec->first < 1 || rec->last < rec->first ||
      (uint64_t)(rec->last - rec->first) + 1 != rec->count) {
    r->inconsistent++;
    return;
  }
  if (r->records++ == 0)
    r->lowest = rec->first;
  if (rec->version == LC_RECORD_SEGMENT_OPEN) {
    r->open_segments++;
    r->open_values += rec->count;
  }
  r->ids += rec->count;
  if (*prev_last && rec->first <= *prev_last) {
    r->overlaps++;
  } else if (*prev_last && rec->first > *prev_last + 1) {
    if (r->gaps < MAX_GAPS_LISTED) {
      r->gap_from[r->gaps] = *prev_last + 1;
      r->gap_to[r->gaps] = rec->first - 1;
    }
    r->gaps++;
    r->missing += (uint64_t)(rec->first - *prev_last - 1);
  }
  if (rec->last > *prev_last)
    *prev_last = rec->last;
  r->highest = *prev_last;
}

static void print_verify(struct cli *c, const char *name,
                         const struct verify_report *r, bool ok) {
  uint64_t listed = r->gaps < MAX_GAPS_LISTED ? r->gaps : MAX_GAPS_LISTED;
  if (c->json) {
    fputs("{\"counter\":", stdout);
    cli_put_json(stdout, name);
    printf(",\"ok\":%s,\"records\":%" PRIu64, ok ? "true" : "false",
           r->records);
    if (r->records)
      printf(",\"lowest\":%" PRId64 ",\"highest\":%" PRId64, r->lowest,
             r->highest);
    else
      fputs(",\"lowest\":null,\"highest\":null", stdout);
    printf(",\"ids\":%" PRIu64 ",\"gaps\":%" PRIu64 ",\"missing\":%" PRIu64
           ",\"gap_list\":[", r->ids, r->gaps, r->missing);
    for (uint64_t i = 0; i < listed; i++)
      printf("%s\"%" PRId64 "-%" PRId64 "\"", i ? "," : "", r->gap_from[i],
             r->gap_to[i]);
    printf("],\"open_segments\":%" PRIu64 ",\"open_segment_values\":%"
           PRIu64, r->open_segments, r->open_values);
    printf(",\"overlaps\":%" PRIu64 ",\"undecodable\":%" PRIu64
           ",\"inconsistent\":%" PRIu64 ",\"reservation\":%" PRId64 "}\n",
           r->overlaps, r->undecodable, r->inconsistent, r->reservation);
    return;
  }
  printf("counter:      %s\n", name);
  printf("records:      %" PRIu64 "\n", r->records);
  if (r->records)
    printf("lowest:       %" PRId64 "\nhighest:      %" PRId64 "\n",
           r->lowest, r->highest);
  else
    printf("lowest:       -\nhighest:      -\n");
  printf("ids covered:  %" PRIu64 "\n", r->ids);
  printf("gaps:         %" PRIu64 " (%" PRIu64 " values never handed out)",
         r->gaps, r->missing);
  for (uint64_t i = 0; i < listed; i++)
    printf("%s%" PRId64 "-%" PRId64, i ? " " : ": ", r->gap_from[i],
           r->gap_to[i]);
  printf("%s\n", r->gaps > listed ? " ..." : "");
  if (r->open_segments)
    printf("open segments: %" PRIu64 " prefetched, %" PRIu64 " values (a "
           "prefetch gap: held when the owner stopped without closing, so\n"
           "              some may never have been handed out; skipped, "
           "never reissued)\n", r->open_segments, r->open_values);
  printf("overlaps:     %" PRIu64 "%s\n", r->overlaps,
         r->overlaps ? " (values logged twice: CORRUPTION)" : "");
  printf("undecodable:  %" PRIu64 "\n", r->undecodable);
  if (r->inconsistent)
    printf("inconsistent: %" PRIu64 " (count does not match first..last)\n",
           r->inconsistent);
  printf("reservation:  %" PRId64 "\n", r->reservation);
  printf("status:       %s\n", ok ? "ok" : "CORRUPT");
}

int cmd_verify(struct cli *c, int argc, char **argv) {
  const char *name;
  int rc;
  if ((rc = cli_name_only(c, argc, argv, &name)) || (rc = cli_open(c)))
    return rc;
  struct verify_report r;
  memset(&r, 0, sizeof r);
  lc_iter *it;
  if ((rc = lc_iter_open(c->h, name, &it)))
    return cli_finish(c, rc, "read the log of '%s'", name);
  int64_t prev_last = 0;
  lc_record rec;
  memset(&rec, 0, sizeof rec);
  while ((rc = lc_iter_next(it, &rec)) != 0) {
    if (rc == 1) {
      verify_record(&r, &rec, &prev_last);
    } else if (rc == LC_ECORRUPT) {
      r.undecodable++;
      if (rec.last > prev_last)       /* its key: the values up to it are */
        prev_last = rec.last;         /* accounted for, not a gap */
    } else {
      cli_runtime_error(rc, "read the log of '%s'", name);
      lc_iter_close(it);
      return cli_close(c, EXIT_RUNTIME);
    }
  }
  lc_iter_close(it);
  rc = lc_reservation(c->h, name, &r.reservation);
  if ((rc = cli_finish(c, rc, "read the reservation of '%s'", name)))
    return rc;
  bool ok = !r.undecodable && !r.overlaps && !r.inconsistent;
  print_verify(c, name, &r, ok);
  return ok ? 0 : EXIT_RUNTIME;
}

/* ------------------------------------------------------------------- dump */

int cmd_dump(struct cli *c, int argc, char **argv) {
  const char *name;
  int rc;
  if ((rc = cli_name_only(c, argc, argv, &name)) || (rc = cli_open(c)))
    return rc;
  lc_iter *it;
  if ((rc = lc_iter_open(c->h, name, &it)))
    return cli_finish(c, rc, "read the log of '%s'", name);
  uint64_t bad = 0;
  lc_record rec;
  memset(&rec, 0, sizeof rec);
  char when[64];
  while ((rc = lc_iter_next(it, &rec)) != 0 && !ferror(stdout)) {
    if (rc == LC_ECORRUPT) {
      bad++;
      const char *why = lc_last_detail();
      if (c->json) {
        printf("{\"undecodable\":true,\"key\":%" PRId64 ",\"detail\":",
               rec.last);
        cli_put_json(stdout, why);
        fputs("}\n", stdout);
      } else {
        printf("# undecodable record (key value %" PRId64 ")%s%s\n", rec.last,
               *why ? ": " : "", why);
      }
      continue;
    }
    if (rc != 1) {
      cli_runtime_error(rc, "read the log of '%s'", name);
      lc_iter_close(it);
      return cli_close(c, EXIT_RUNTIME);
    }
    cli_format_time(rec.time_us, when, sizeof when);
    const char *kind = rec.version == LC_RECORD_SEGMENT_OPEN ? "segment-open"
                       : rec.version == LC_RECORD_SEGMENT    ? "segment"
                                                             : "block";
    if (c->json)
      printf("{\"first\":%" PRId64 ",\"last\":%" PRId64 ",\"count\":%" PRIu64
             ",\"time_us\":%" PRId64 ",\"time\":\"%s\",\"kind\":\"%s\"}\n",
             rec.first, rec.last, rec.count, rec.time_us, when, kind);
    else if (rec.count == 1 && rec.first == rec.last)
      printf("%" PRId64 " 1 %s%s%s\n", rec.first, when,
             rec.version == LC_RECORD_BLOCK ? "" : " ",
             rec.version == LC_RECORD_BLOCK ? "" : kind);
    else
      printf("%" PRId64 "-%" PRId64 " %" PRIu64 " %s%s%s\n", rec.first,
             rec.last, rec.count, when, rec.version == LC_RECORD_BLOCK ? "" : " ",
             rec.version == LC_RECORD_BLOCK ? "" : kind);
  }
  lc_iter_close(it);
  if ((rc = cli_close(c, 0)))
    return rc;
  if (bad) {
    fprintf(stderr, PROG ": %" PRIu64 " undecodable record%s in the log of "
                         "'%s'\n", bad, bad == 1 ? "" : "s", name);
    return EXIT_RUNTIME;
  }
  return 0;
}
