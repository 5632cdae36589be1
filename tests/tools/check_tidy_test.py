#!/usr/bin/env python3
"""tools/check-tidy on a copy of the tree: nothing changed and a harmless change pass; a planted
finding of an enabled check, in a source or in a header, fails with the check named.

usage: check_tidy_test.py BUILD_DIR   (a configured build of this tree: its compile database)

The copy is a fresh git repository (the tree as it is now, committed once), so the test sees
the working .clang-tidy and tools/check-tidy, and touches neither the checkout nor its git. The
build's compile database is copied with the tree's paths pointed at the copy; its generated
headers are read from BUILD_DIR, which the copy's database keeps pointing at.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

SOURCE = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
SKIP = {'build', 'build-asan', 'build-fuzz', 'out', '.git', 'node_modules', '.cache'}
BUILD = None  # set from argv

# A small translation unit and its header: the three clang-tidy runs of this test parse it.
SMALL_SOURCE = 'common/base/event_fd.cpp'
SMALL_HEADER = 'common/base/event_fd.h'
# bugprone-use-after-move (enabled in .clang-tidy): reading a string after moving from it.
# Written so that neither GCC nor clang warns, so the only finding is the check's.
USE_AFTER_MOVE = '''
#include <string>
#include <utility>
namespace carapace::tidy_plant {
inline std::string moved_twice(std::string s) {
  std::string t = std::move(s);
  return t + s;
}
}  // namespace carapace::tidy_plant
'''


def rewrite(text, tree):
    """The tree's paths in a compile command pointed at `tree`, build folder paths kept. The
    source folder appears bare too (-I/path/to/tree), not only as a prefix of a file's path."""
    keep = '\0BUILD\0'
    text = text.replace(BUILD, keep)
    text = re.sub(re.escape(SOURCE) + r'(?=/|\s|"|$)', lambda _: tree, text)
    return text.replace(keep, BUILD)


class CheckTidyTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix='carapace-tidy-test-')
        cls.root = os.path.join(cls.tmp, 'tree')
        shutil.copytree(SOURCE, cls.root, symlinks=True,
                        ignore=lambda d, names: [n for n in names if n in SKIP and
                                                 os.path.samefile(d, SOURCE)])
        git = ['git', '-C', cls.root, '-c', 'user.name=check-tidy test',
               '-c', 'user.email=check-tidy@invalid', '-c', 'commit.gpgsign=false']
        subprocess.run(git + ['init', '-q'], check=True)
        subprocess.run(git + ['add', '-A'], check=True)
        subprocess.run(git + ['commit', '-q', '-m', 'the tree under test'], check=True)
        cls.git = git
        with open(os.path.join(BUILD, 'compile_commands.json'), encoding='utf-8') as f:
            entries = json.load(f)
        if not any(e['file'].startswith(SOURCE + os.sep) for e in entries):
            raise RuntimeError(f'{BUILD}/compile_commands.json is not a build of {SOURCE}')
        cls.build = os.path.join(cls.tmp, 'build')
        os.makedirs(cls.build)
        for e in entries:
            for key in ('file', 'command'):
                if key in e:
                    e[key] = rewrite(e[key], cls.root)
            if 'arguments' in e:
                e['arguments'] = [rewrite(a, cls.root) for a in e['arguments']]
        with open(os.path.join(cls.build, 'compile_commands.json'), 'w', encoding='utf-8') as f:
            json.dump(entries, f)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def tearDown(self):
        # Each test plants on the committed tree: put it back.
        subprocess.run(self.git + ['reset', '-q', '--hard', 'HEAD'], check=True)
        subprocess.run(self.git + ['clean', '-q', '-fd'], check=True)
        if subprocess.run(self.git + ['rev-parse', '-q', '--verify', 'HEAD~1'],
                          capture_output=True).returncode == 0:
            subprocess.run(self.git + ['reset', '-q', '--hard', 'HEAD~1'], check=True)

    def check(self, *args):
        return subprocess.run([sys.executable, os.path.join(self.root, 'tools', 'check-tidy'),
                               '-B', self.build, *args], capture_output=True, text=True,
                              timeout=300)

    def append(self, rel, text):
        with open(os.path.join(self.root, rel), 'a', encoding='utf-8') as f:
            f.write(text)

    def test_nothing_changed_passes(self):
        r = self.check('HEAD')
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn('no changed C++ files', r.stdout)

    def test_a_harmless_change_to_a_committed_file_passes(self):
        # clang-tidy does run (one unit), and the file as committed has no finding.
        self.append(SMALL_SOURCE, '// A comment changes nothing clang-tidy looks at.\n')
        r = self.check('HEAD')
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn('1 translation unit clean', r.stdout)

    def test_a_committed_finding_in_a_source_fails_by_default_naming_the_check(self):
        # No BASE: the commit before HEAD, so the last commit's files are checked.
        self.append(SMALL_SOURCE, USE_AFTER_MOVE)
        subprocess.run(self.git + ['commit', '-q', '-am', 'a finding, committed'], check=True)
        r = self.check()
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn(f'{SMALL_SOURCE}: findings', r.stdout)
        self.assertIn(f'{SMALL_SOURCE}:', r.stdout.split(': findings', 1)[1])
        self.assertIn('[bugprone-use-after-move', r.stdout)

    def test_a_planted_finding_in_a_header_fails_through_a_source_including_it(self):
        self.append(SMALL_HEADER, USE_AFTER_MOVE)
        r = self.check('HEAD')
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn(f'(for {SMALL_HEADER}): findings', r.stdout)
        self.assertIn(f'{SMALL_HEADER}:', r.stdout.split(': findings', 1)[1])
        self.assertIn('[bugprone-use-after-move', r.stdout)

    def test_a_file_outside_the_compile_database_is_named_not_checked(self):
        os.makedirs(os.path.join(self.root, 'sideline'))
        self.append('sideline/proxy.cpp', USE_AFTER_MOVE)
        r = self.check('HEAD')
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn('sideline/proxy.cpp: not in', r.stdout)
        self.assertIn('no changed C++ files to check', r.stdout)


if __name__ == '__main__':
    if len(sys.argv) < 2:
        sys.exit('usage: check_tidy_test.py BUILD_DIR')
    BUILD = os.path.abspath(sys.argv.pop(1))
    unittest.main()
