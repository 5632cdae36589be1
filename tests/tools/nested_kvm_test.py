#!/usr/bin/env python3
"""tools/nested-kvm driven by a fake QEMU: a command's status and output come back; an L1 that
freezes (a silent console, with or without a kernel complaint) is reported with its console and
run again in a fresh L1, and a last failure is exit status 125 -- never a silent exit."""
import os
import shutil
import stat
import subprocess
import tempfile
import unittest

SOURCE = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
HARNESS = os.path.join(SOURCE, 'tools', 'nested-kvm')

# Stands in for qemu-system-x86_64: answers the harness's probes, then plays an L1 whose
# behaviour FAKE_L1 names, writing what the real l1-init writes (console lines, the job's output
# and rc in the job folder named by nested.job= on the kernel command line).
FAKE_QEMU = r'''#!/bin/bash
case "$*" in
  "-accel help") echo tcg; exit 0 ;;
  "-cpu help") echo "x86 max"; exit 0 ;;
esac
console= job=
while [ $# -gt 0 ]; do
  case "$1" in
    -serial) console=${2#file:}; shift 2 ;;
    -append) for w in $2; do case "$w" in nested.job=*) job=${w#nested.job=} ;; esac; done; shift 2 ;;
    *) shift ;;
  esac
done
runs=$(( $(cat "$FAKE_STATE/runs" 2>/dev/null || echo 0) + 1 ))
echo "$runs" > "$FAKE_STATE/runs"
echo "nested-l1: ready: 1 cpus with svm, /dev/kvm from kvm_amd" >> "$console"
mode=$FAKE_L1
[ "$mode" = freeze-once ] && { [ "$runs" -eq 1 ] && mode=freeze || mode=run; }
case "$mode" in
  run) echo "hello from L1 run $runs" > "$job/output"; echo 7 > "$job/rc"; exit 0 ;;
  freeze) echo "last words before the freeze" >> "$console"; exec sleep 600 ;;
  lockup) echo "watchdog: BUG: soft lockup - CPU#0 stuck for 64s! [qemu:42]" >> "$console"
          # The trace comes a moment after the complaint, in one write: the harness must wait
          # for it before it stops the L1.
          sleep 0.5; seq -f 'trace line %g' 200 > "$FAKE_STATE/trace"; cat "$FAKE_STATE/trace" >> "$console"
          exec sleep 600 ;;
  die) echo "Kernel panic - not syncing: fake" >> "$console"; exit 0 ;;
esac
'''


class NestedKvmHarnessTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix='carapace-nested-kvm-test-')
        self.bin = os.path.join(self.tmp, 'bin')
        self.state = os.path.join(self.tmp, 'state')
        self.l1 = os.path.join(self.tmp, 'l1')
        for d in (self.bin, self.state, self.l1):
            os.mkdir(d)
        qemu = os.path.join(self.bin, 'qemu-system-x86_64')
        with open(qemu, 'w', encoding='utf-8') as f:
            f.write(FAKE_QEMU)
        os.chmod(qemu, stat.S_IRWXU)
        for name in ('vmlinuz', 'initrd.gz'):
            open(os.path.join(self.l1, name), 'w', encoding='utf-8').close()

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def run_harness(self, fake_l1, *options):
        env = dict(os.environ, PATH=self.bin + ':' + os.environ['PATH'], FAKE_L1=fake_l1,
                   FAKE_STATE=self.state, CARAPACE_NESTED_L1_DIR=self.l1,
                   CARAPACE_NESTED_FREEZE_S='2')
        return subprocess.run([HARNESS, '--scratch', '1', '--quiet', *options, '--', 'true'],
                              env=env, capture_output=True, text=True, timeout=120)

    def runs(self):
        with open(os.path.join(self.state, 'runs'), encoding='utf-8') as f:
            return int(f.read())

    def test_command_status_and_output_come_back(self):
        r = self.run_harness('run')
        self.assertEqual(r.returncode, 7, r.stderr)
        self.assertIn('hello from L1 run 1', r.stdout)
        self.assertIn('command exited with status 7', r.stderr)
        self.assertEqual(self.runs(), 1)

    def test_silent_freeze_is_shown_and_retried_until_125(self):
        r = self.run_harness('freeze')
        self.assertEqual(r.returncode, 125, r.stderr)
        self.assertIn('---- L1 console (last 40 lines) ----', r.stderr)
        self.assertIn('last words before the freeze', r.stderr)
        for n in range(1, 5):
            self.assertIn('running the command again in a fresh L1 (%d of 4)' % n, r.stderr)
        self.assertIn('the L1 failed (froze, locked up or died) on every one of 5 runs', r.stderr)
        self.assertEqual(self.runs(), 5)

    def test_one_freeze_then_a_good_run_passes(self):
        r = self.run_harness('freeze-once')
        self.assertEqual(r.returncode, 7, r.stderr)
        self.assertIn('hello from L1 run 2', r.stdout)
        self.assertIn('(1 of 4)', r.stderr)
        self.assertEqual(self.runs(), 2)

    def test_lockup_is_shown_from_its_first_complaint(self):
        r = self.run_harness('lockup', '--freeze-retries', '0')
        self.assertEqual(r.returncode, 125, r.stderr)
        self.assertIn('from its first complaint, line 2; at most 150 lines', r.stderr)
        self.assertIn('trace line 149', r.stderr)
        self.assertNotIn('trace line 150\n', r.stderr)
        self.assertEqual(self.runs(), 1)

    def test_l1_that_dies_before_the_command_ends_is_retried(self):
        r = self.run_harness('die', '--freeze-retries', '1')
        self.assertEqual(r.returncode, 125, r.stderr)
        self.assertIn('Kernel panic - not syncing: fake', r.stderr)
        self.assertEqual(self.runs(), 2)


if __name__ == '__main__':
    unittest.main()
