#!/usr/bin/env python3
"""tools/check-layers on a copy of the tree: clean as committed, and failing, with the offending
include named, once a back-edge, an undeclared folder or a cycle is planted."""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

SOURCE = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
CHECK = os.path.join(SOURCE, 'tools', 'check-layers')
SKIP = {'build', 'build-asan', 'build-fuzz', 'out', '.git', 'node_modules', 'tests', 'bench'}


class CheckLayersTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix='carapace-layers-')
        self.root = os.path.join(self.tmp, 'tree')
        shutil.copytree(SOURCE, self.root, symlinks=True,
                        ignore=lambda d, names: [n for n in names if n in SKIP and
                                                 os.path.samefile(d, SOURCE)])

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def check(self):
        return subprocess.run([sys.executable, CHECK, '--root', self.root],
                              capture_output=True, text=True, timeout=120)

    def append(self, rel, text):
        with open(os.path.join(self.root, rel), 'a', encoding='utf-8') as f:
            f.write(text)

    def assert_check_fails_saying(self, *lines):
        """The check exits 1 and prints each of `lines`."""
        r = self.check()
        self.assertEqual(r.returncode, 1, r.stdout)
        for line in lines:
            self.assertIn(line, r.stdout)

    def test_the_committed_tree_passes(self):
        r = self.check()
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn('no back-edges', r.stdout)

    def test_a_planted_back_edge_fails_with_the_offending_include(self):
        # The guest-memory layer reaching up into the daemon: the kind of edge the DAG forbids.
        self.append('vmm/memory/guest_memory.h', '\n#include "daemon/core/sandbox_service.h"\n')
        self.assert_check_fails_saying(
            'vmm/memory/guest_memory.h:',
            'includes daemon/core/sandbox_service.h: vmm/memory may not include daemon/core')

    def test_a_device_including_the_machine_fails(self):
        self.append('vmm/devices/rng/rng.h', '\n#include "vmm/machine/machine.h"\n')
        self.assert_check_fails_saying('vmm/devices/rng may not include vmm/machine')

    def test_an_undeclared_source_folder_fails(self):
        os.makedirs(os.path.join(self.root, 'sideline'))
        self.append('sideline/proxy.cpp', '#include "common/base/result.h"\n')
        self.assert_check_fails_saying('sideline/: a source folder layers.txt does not declare')

    def test_a_cycle_in_the_declaration_fails(self):
        self.append('layers.txt', 'cycle/a: cycle/b\ncycle/b: cycle/a\n')
        self.assert_check_fails_saying('cycle: cycle/a -> cycle/b -> cycle/a')


if __name__ == '__main__':
    unittest.main()
