/* progress.c — aligned per-trial lines and the time-left estimate (see progress.h). */
#include "progress.h"

#include <string.h>

#define GIB 1073741824.0

/* columns: method, S, status, peak, intermediate, host, step, tokens/s/GPU, TFLOP/s/GPU, note */
#define ROW_FMT "%10s %10s %8s %9s %9s %9s %10s %11s %11s  %s"

/* the header columns without the note column's trailing blanks */
#define HDR_FMT "#%10s %10s %8s %9s %9s %9s %10s %11s %11s\n"

void cpb_progress_header(FILE *f)
{
    fprintf(f, HDR_FMT, "method", "seq_len", "status", "peak", "interm.", "host", "step",
            "tokens/s", "TFLOP/s");
    fprintf(f, HDR_FMT, "", "(tokens)", "", "(GiB)", "(GiB)", "(GiB)", "(s)", "(per GPU)",
            "(per GPU)");
}

static void num(char *b, size_t n, double v, const char *fmt, int show)
{
    if (show) snprintf(b, n, fmt, v);
    else snprintf(b, n, "-");
}

void cpb_progress_format_row(char *buf, size_t len, const cpb_row *r, const char *note)
{
    int ok = strcmp(r->status, "ok") == 0;
    int mem = ok || strcmp(r->status, "oom") == 0; /* an OOM row still has its peak so far */
    char seq[24], peak[16], inter[16], host[16], step[16], tps[16], tfl[16];
    snprintf(seq, sizeof seq, "%lld", (long long)r->seq_len);
    /* small test shapes keep 4 decimals so they do not all read 0.00 */
    const char *gfmt = r->peak_bytes < GIB / 10 ? "%.4f" : "%.2f";
    num(peak, sizeof peak, (double)r->peak_bytes / GIB, gfmt, mem && r->peak_bytes > 0);
    num(inter, sizeof inter, (double)r->intermediate_bytes / GIB, gfmt, mem && r->peak_bytes > 0);
    num(host, sizeof host, (double)r->host_peak_bytes / GIB, gfmt, mem && r->peak_bytes > 0);
    if (ok && r->step_s > 0) cpb_format_seconds(step, sizeof step, r->step_s);
    else snprintf(step, sizeof step, "-");
    num(tps, sizeof tps, r->tokens_per_s_per_gpu, "%.1f", ok && r->step_s > 0);
    num(tfl, sizeof tfl, r->tflops_per_gpu, "%.1f", ok && r->step_s > 0);
    snprintf(buf, len, " " ROW_FMT, r->method, seq, r->status, peak, inter, host, step, tps, tfl,
             note ? note : "");
    /* no trailing blanks when there is no note */
    size_t n = strlen(buf);
    while (n > 0 && buf[n - 1] == ' ') buf[--n] = 0;
}

void cpb_format_seconds(char *buf, size_t len, double s)
{
    double a = s < 0 ? -s : s;
    int dec = a >= 1000 ? 0 : a >= 100 ? 1 : a >= 10 ? 2 : a >= 1 ? 3 : a >= 0.1 ? 4 : a >= 0.01 ? 5 : a >= 0.001 ? 6 : 7;
    if (a == 0) dec = 0;
    snprintf(buf, len, "%.*f", dec, s);
}

void cpb_progress_format_duration(char *buf, size_t len, double s)
{
    if (s < 0) s = 0;
    if (s < 60) snprintf(buf, len, "%.1fs", s);
    else if (s < 3600) snprintf(buf, len, "%dm%02ds", (int)(s / 60), (int)s % 60);
    else snprintf(buf, len, "%dh%02dm", (int)(s / 3600), ((int)s % 3600) / 60);
}

void cpb_progress_add(cpb_progress *p, double seconds, int cached)
{
    p->done++;
    if (!cached) {
        p->run++;
        p->run_seconds += seconds;
    }
}

void cpb_progress_format_line(char *buf, size_t len, const cpb_progress *p, int left,
                              const char *what)
{
    char eta[32] = "?", per[32] = "?";
    if (p->run > 0) {
        double mean = p->run_seconds / p->run;
        cpb_progress_format_duration(eta, sizeof eta, mean * left);
        cpb_progress_format_duration(per, sizeof per, mean);
    }
    snprintf(buf, len, "# [%d done, ~%d to go] ~%s left (%s per trial)%s%s", p->done, left, eta,
             per, what && *what ? ", next: " : "", what ? what : "");
}
