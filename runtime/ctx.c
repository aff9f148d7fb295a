/* ctx.c — context life cycle, streams, events, ranges and groups (backend-independent
 * bookkeeping; the backend does the real work). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cpb_backend.h"
#include "internal.h"
#include "race.h"

int cpb_ctx_create(const cpb_backend *be, const cpb_ctx_opts *opts, cpb_ctx **out, char *err, size_t err_len)
{
    *out = NULL;
    if (!be) {
        snprintf(err, err_len, "no backend given for the context");
        return CPB_ERR_INVALID;
    }
    cpb_ctx *ctx = calloc(1, sizeof *ctx);
    if (!ctx) {
        snprintf(err, err_len, "out of host memory creating a context");
        return CPB_ERR_NOMEM_HOST;
    }
    ctx->be = be;
    ctx->opts = *opts;
    ctx->dev.capacity = opts->capacity;
    ctx->host.capacity = opts->host_capacity;
    ctx->rank = 0;
    ctx->world = 1;
    ctx->nstreams = 1;
    snprintf(ctx->stream_names[0], sizeof ctx->stream_names[0], "compute");
    int rc = CPB_OK;
    if (opts->race_check) rc = cpb_race_init(ctx);
    if (rc == CPB_OK) rc = be->init(ctx);
    if (rc == CPB_OK) rc = be->stream_create(ctx, 0, "compute");
    /* a cuDNN compiled in but not usable here (1: no libcudnn, one refused) serves nothing:
     * --attn auto runs our kernels, --attn cudnn fails naming why */
    ctx->attn_cudnn_present =
        be->attn_cudnn ? be->attn_cudnn(ctx->attn_cudnn_why, sizeof ctx->attn_cudnn_why) == 2 : 1;
    if (rc == CPB_OK) {
        cpb_group *w = calloc(1, sizeof *w);
        int *ranks = w ? malloc(sizeof(int) * (size_t)ctx->world) : NULL;
        if (!w || !ranks) {
            free(w);
            free(ranks);
            rc = cpb_fail(ctx, CPB_ERR_NOMEM_HOST, "out of host memory creating the world group");
        } else {
            for (int i = 0; i < ctx->world; i++) ranks[i] = i;
            w->size = ctx->world;
            w->rank = ctx->rank;
            w->id = 0;
            w->ranks = ranks;
            ctx->groups[0] = w;
            ctx->ngroups = 1;
            rc = be->group_create(ctx, w);
        }
    }
    if (rc != CPB_OK) {
        /* name the backend once: its own messages may start with it */
        char who[64];
        snprintf(who, sizeof who, "%s backend:", be->name);
        snprintf(err, err_len, "%s%s%s", strncmp(ctx->err, who, strlen(who)) == 0 ? "" : who,
                 strncmp(ctx->err, who, strlen(who)) == 0 ? "" : " ", ctx->err);
        cpb_ctx_destroy(ctx);
        return rc;
    }
    *out = ctx;
    return CPB_OK;
}

void cpb_ctx_destroy(cpb_ctx *ctx)
{
    if (!ctx) return;
    cpb_free_all(ctx);
    for (int i = ctx->ngroups - 1; i >= 0; i--) {
        if (ctx->be->group_destroy) ctx->be->group_destroy(ctx, ctx->groups[i]);
        free(ctx->groups[i]->ranks);
        free(ctx->groups[i]);
    }
    ctx->be->finalize(ctx);
    cpb_race_destroy(ctx);
    cpb_buf_pool_free(ctx);
    free(ctx);
}

void cpb_ctx_set_problem(cpb_ctx *ctx, const cpb_problem *p)
{
    ctx->p = *p;
    int c = cpb_attn_choice_parse(cpb_knob_str(p, "attn"));
    ctx->attn_choice = c < 0 ? CPB_ATTN_CHOOSE_AUTO : (cpb_attn_choice)c; /* the knob's check refused others */
}

void cpb_ctx_set_attn(cpb_ctx *ctx, cpb_attn_choice c)
{
    ctx->attn_choice = c;
}

const cpb_problem *cpb_problem_of(const cpb_ctx *ctx)
{
    return &ctx->p;
}

/* inside a scope (scope.c) the method's world is the scope's group */
cpb_group *cpb_world(cpb_ctx *ctx)
{
    return ctx->scope_world ? ctx->scope_world : ctx->groups[0];
}

int cpb_rank(const cpb_ctx *ctx)
{
    return ctx->scope_world ? ctx->scope_world->rank : ctx->rank;
}

int cpb_world_size(const cpb_ctx *ctx)
{
    return ctx->scope_world ? ctx->scope_world->size : ctx->world;
}

static int group_of_world_ranks(cpb_ctx *ctx, int n, const int *world_ranks, cpb_group **out);

int cpb_group_create(cpb_ctx *ctx, int n, const int *world_ranks, cpb_group **out)
{
    *out = NULL;
    const cpb_group *sw = ctx->scope_world;
    if (!sw) return group_of_world_ranks(ctx, n, world_ranks, out);
    /* inside a scope the members are ranks of the scope's world: map them to real ranks */
    if (n <= 0) return cpb_fail(ctx, CPB_ERR_INVALID, "rank %d creates a group of %d members", cpb_rank(ctx), n);
    int *real = malloc(sizeof(int) * (size_t)n);
    if (!real) return cpb_fail(ctx, CPB_ERR_NOMEM_HOST, "out of host memory creating a group");
    for (int i = 0; i < n; i++) {
        if (world_ranks[i] < 0 || world_ranks[i] >= sw->size) {
            free(real);
            return cpb_fail(ctx, CPB_ERR_INVALID, "group member %d is not a rank of the method's world of %d",
                            world_ranks[i], sw->size);
        }
        real[i] = sw->ranks[world_ranks[i]];
    }
    int rc = group_of_world_ranks(ctx, n, real, out);
    free(real);
    return rc;
}

static int group_of_world_ranks(cpb_ctx *ctx, int n, const int *world_ranks, cpb_group **out)
{
    *out = NULL;
    if (ctx->ngroups >= CPB_MAX_GROUPS)
        return cpb_fail(ctx, CPB_ERR_INVALID, "too many groups (%d): create groups once per context", CPB_MAX_GROUPS);
    int me = -1;
    for (int i = 0; i < n; i++) {
        if (world_ranks[i] < 0 || world_ranks[i] >= ctx->world)
            return cpb_fail(ctx, CPB_ERR_INVALID, "group member %d is not a rank of the world of %d", world_ranks[i], ctx->world);
        if (world_ranks[i] == ctx->rank) me = i;
    }
    if (n <= 0 || me < 0)
        return cpb_fail(ctx, CPB_ERR_INVALID, "rank %d creates a group it is not a member of", ctx->rank);
    /* A group with exactly these members already exists: return it, so methods can ask for
     * their groups in every trial without exhausting the table (every member of a group
     * runs the same trials, so all of them find it or all of them create it). */
    for (int i = 0; i < ctx->ngroups; i++) {
        cpb_group *g = ctx->groups[i];
        if (g->size == n && memcmp(g->ranks, world_ranks, sizeof(int) * (size_t)n) == 0) {
            *out = g;
            return CPB_OK;
        }
    }
    cpb_group *g = calloc(1, sizeof *g);
    int *r = g ? malloc(sizeof(int) * (size_t)n) : NULL;
    if (!g || !r) {
        free(g);
        free(r);
        return cpb_fail(ctx, CPB_ERR_NOMEM_HOST, "out of host memory creating a group");
    }
    memcpy(r, world_ranks, sizeof(int) * (size_t)n);
    g->size = n;
    g->rank = me;
    g->ranks = r;
    g->id = ctx->ngroups;
    int rc = ctx->be->group_create(ctx, g);
    if (rc != CPB_OK) {
        free(r);
        free(g);
        return rc;
    }
    ctx->groups[ctx->ngroups++] = g;
    *out = g;
    return CPB_OK;
}

/* ---------------------------------------------------------------- streams and events */

int cpb_stream(cpb_ctx *ctx, const char *name, int *id)
{
    for (int i = 0; i < ctx->nstreams; i++)
        if (strcmp(ctx->stream_names[i], name) == 0) {
            *id = i;
            return CPB_OK;
        }
    if (ctx->nstreams >= CPB_MAX_STREAMS)
        return cpb_fail(ctx, CPB_ERR_INVALID, "too many streams (%d) creating '%s'", CPB_MAX_STREAMS, name);
    int s = ctx->nstreams;
    snprintf(ctx->stream_names[s], sizeof ctx->stream_names[s], "%s", name);
    CPB_TRY(ctx->be->stream_create(ctx, s, name));
    ctx->nstreams++;
    cpb_race_stream_added(ctx, s);
    *id = s;
    return CPB_OK;
}

static int check_stream(cpb_ctx *ctx, int stream, const char *what)
{
    if (stream < 0 || stream >= ctx->nstreams)
        return cpb_fail(ctx, CPB_ERR_INVALID, "%s on unknown stream %d (create streams with cpb_stream)", what, stream);
    return CPB_OK;
}

int cpb_event_record(cpb_ctx *ctx, int stream, cpb_event *ev)
{
    CPB_TRY(check_stream(ctx, stream, "event record"));
    int id = ctx->nevents++;
    if (ctx->rep_log) cpb_repeat_log_event(ctx);
    CPB_TRY(cpb_race_event_record(ctx, stream, id));
    CPB_TRY(ctx->be->event_record(ctx, stream, id));
    ev->id = id;
    return CPB_OK;
}

int cpb_stream_wait(cpb_ctx *ctx, int stream, cpb_event ev)
{
    CPB_TRY(check_stream(ctx, stream, "stream wait"));
    if (ev.id < 0 || ev.id >= ctx->nevents)
        return cpb_fail(ctx, CPB_ERR_INVALID, "stream wait on event %d that was never recorded", ev.id);
    CPB_TRY(cpb_race_stream_wait(ctx, stream, ev.id));
    return ctx->be->stream_wait(ctx, stream, ev.id);
}

int cpb_stream_join(cpb_ctx *ctx, int waiter, int on)
{
    if (waiter == on) return CPB_OK;
    cpb_event ev;
    CPB_TRY(cpb_event_record(ctx, on, &ev));
    return cpb_stream_wait(ctx, waiter, ev);
}

int cpb_sync(cpb_ctx *ctx)
{
    cpb_race_sync(ctx);
    return ctx->be->sync(ctx);
}

/* ---------------------------------------------------------------- ranges */

/* out (cap bytes) += c, counted in *n as snprintf counts what it could not write */
static void put_char(char *out, size_t cap, size_t *n, char c)
{
    if (*n + 1 < cap) out[*n] = c;
    (*n)++;
}

/* vsnprintf for the formats ranges use (text, %d, %lld, %s, %%): the same characters
 * and return value; -2 for any other conversion (the caller prints it with vsnprintf).
 * Methods push a range per stage and per ring step, and glibc's printf per push was a
 * thirtieth of a large simulated trial. */
static int range_format(char *out, size_t cap, const char *fmt, va_list ap)
{
    size_t n = 0;
    for (const char *f = fmt; *f; f++) {
        if (*f != '%') {
            put_char(out, cap, &n, *f);
            continue;
        }
        f++;
        if (*f == '%') {
            put_char(out, cap, &n, '%');
        } else if (*f == 's') {
            for (const char *a = va_arg(ap, const char *); *a; a++) put_char(out, cap, &n, *a);
        } else if (*f == 'd' || (f[0] == 'l' && f[1] == 'l' && f[2] == 'd')) {
            long long v = *f == 'd' ? va_arg(ap, int) : va_arg(ap, long long);
            if (*f == 'l') f += 2;
            unsigned long long u = v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v;
            char digits[24];
            int k = 0;
            do digits[k++] = (char)('0' + u % 10);
            while (u /= 10);
            if (v < 0) put_char(out, cap, &n, '-');
            while (k) put_char(out, cap, &n, digits[--k]);
        } else {
            return -2;
        }
    }
    if (cap) out[n < cap ? n : cap - 1] = 0;
    return (int)n;
}

int cpb_range_push(cpb_ctx *ctx, const char *fmt, ...)
{
    if (ctx->range_depth >= CPB_RANGE_DEPTH)
        return cpb_fail(ctx, CPB_ERR_INVALID, "ranges nested deeper than %d (a missing cpb_range_pop?)", CPB_RANGE_DEPTH);
    size_t len = (size_t)ctx->range_len;
    ctx->range_mark[ctx->range_depth++] = (int)len;
    char part[128];
    va_list ap, again;
    va_start(ap, fmt);
    va_copy(again, ap);
    int np = range_format(part, sizeof part, fmt, ap);
    if (np == -2) np = vsnprintf(part, sizeof part, fmt, again);
    va_end(again);
    va_end(ap);
    /* range + "/" + part, cut to fit as snprintf would (a second printf per range cost more
     * than the copy: methods push a range per stage and per ring step) */
    size_t n = np < 0 ? 0 : (size_t)np < sizeof part ? (size_t)np : sizeof part - 1;
    size_t room = sizeof ctx->range - 1 - len, at = len;
    if (len && room > 0) ctx->range[at++] = '/', room--;
    if (n > room) n = room;
    memcpy(ctx->range + at, part, n);
    ctx->range[at + n] = 0;
    ctx->range_len = (int)(at + n);
    ctx->opname_prefix = -1;
    if (ctx->be->range_push) ctx->be->range_push(ctx, ctx->range);
    return CPB_OK;
}

int cpb_range_pop(cpb_ctx *ctx)
{
    if (ctx->range_depth <= 0)
        return cpb_fail(ctx, CPB_ERR_INVALID, "cpb_range_pop without a matching push");
    ctx->range_len = ctx->range_mark[--ctx->range_depth];
    ctx->opname_prefix = -1;
    ctx->range[ctx->range_len] = 0;
    if (ctx->be->range_pop) ctx->be->range_pop(ctx);
    return CPB_OK;
}

/* ---------------------------------------------------------------- data in and out */

int cpb_upload(cpb_ctx *ctx, cpb_view dst, const float *src)
{
    CPB_TRY(cpb_sync(ctx));
    return ctx->be->upload(ctx, dst, src);
}

int cpb_download(cpb_ctx *ctx, cpb_view src, float *dst)
{
    CPB_TRY(cpb_sync(ctx));
    return ctx->be->download(ctx, src, dst);
}
