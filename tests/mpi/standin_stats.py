#!/usr/bin/python3
"""standin_stats.py DIR EXPECT... -- CMD...: run CMD (it must exit 0) with the CPU stand-in
counting the CUDA, cuBLAS, NCCL and NVTX calls (CPB_STANDIN_STATS; backends/cuda/standin),
then check each EXPECT, a Python expression over these functions of the counts, summed over
the ranks' files:

  calls(NAME)              every call of NAME
  calls(NAME, from_trial)  the calls inside the NVTX 'trial' ranges from_trial, from_trial+1,
                           ... (1 = the first trial, usually the warm-up step)
  trials()                 the most 'trial' ranges any rank ran
  value(NAME, V)           how often value V was counted for NAME (e.g. stream priorities)

Prints the counts it used; exits 1 naming the first expectation that does not hold."""
import glob
import os
import subprocess
import sys


def main():
    args = sys.argv[1:]
    if '--' not in args or len(args) < 3:
        print(__doc__)
        return 2
    cut = args.index('--')
    out_dir, expects, cmd = args[0], args[1:cut], args[cut + 1:]
    os.makedirs(out_dir, exist_ok=True)
    for f in glob.glob(os.path.join(out_dir, 'stats.*')):
        os.remove(f)
    env = dict(os.environ, CPB_STANDIN_STATS=os.path.join(out_dir, 'stats'))
    rc = subprocess.call(cmd, env=env)
    if rc != 0:
        print('standin_stats: the command exited with %d' % rc)
        return 1
    files = glob.glob(os.path.join(out_dir, 'stats.*'))
    if not files:
        print('standin_stats: no statistics were written (is the cuda backend the stand-in?)')
        return 1
    calls, values, ntrials = {}, {}, 0
    for f in files:
        for line in open(f):
            w = line.split()
            if not w or w[0].startswith('#'):
                continue
            if w[0] == 'trials':
                ntrials = max(ntrials, int(w[1]))
            elif w[0] == 'call':
                # the name may have spaces: the counts are the trailing integers
                k = len(w)
                while k > 2 and w[k - 1].lstrip('-').isdigit():
                    k -= 1
                name, nums = ' '.join(w[1:k]), [int(x) for x in w[k:]]
                acc = calls.setdefault(name, [])
                acc.extend([0] * (len(nums) - len(acc)))
                for i, x in enumerate(nums):
                    acc[i] += x
            elif w[0] == 'value':
                key = (' '.join(w[1:-2]), int(w[-2]))
                values[key] = values.get(key, 0) + int(w[-1])

    def calls_fn(name, from_trial=None):
        c = calls.get(name, [0])
        if from_trial is None:
            return c[0]
        return sum(c[from_trial:])

    env_eval = {'calls': calls_fn, 'trials': lambda: ntrials, 'value': lambda n, v: values.get((n, v), 0)}
    status = 0
    for e in expects:
        ok = eval(e, {'__builtins__': {}}, env_eval)
        print('%-4s %s' % ('ok' if ok else 'FAIL', e))
        if not ok:
            status = 1
    if status:
        for name in sorted(calls):
            print('  call %s: total %d, by trial %s' % (name, calls[name][0], calls[name][1:]))
    return status


if __name__ == '__main__':
    sys.exit(main())
