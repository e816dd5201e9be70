'use strict';
// Loaded with `node --require` into a process the breakdown section measures
// (`npm run bench -- --sections breakdown --alloc`). SIGUSR2 starts V8's
// sampling heap profiler on the main thread's heap, counting objects that
// the collector has freed since as well (what was allocated, not what is
// still live), and writes `$BENCH_ALLOC_DIR/<pid>.started`. The next SIGUSR2
// stops it and writes the profile (`<pid>.heapprofile`, which Chrome DevTools
// opens), then what it counted (`<pid>.json`, { bytes }). Worker threads have
// heaps of their own, which this does not see.
const fs = require('node:fs');
const path = require('node:path');
const inspector = require('node:inspector');

const dir = process.env.BENCH_ALLOC_DIR;
if (!dir) throw new Error('bench/alloc-sampler.cjs needs BENCH_ALLOC_DIR');

const session = new inspector.Session();
session.connect();
session.post('HeapProfiler.enable');
let sampling = false;

/** The bytes a sampled profile counts: every node's own allocations. */
function allocated(node) {
  return node.selfSize + (node.children ?? []).reduce((sum, child) => sum + allocated(child), 0);
}

process.on('SIGUSR2', () => {
  if (!sampling) {
    session.post('HeapProfiler.startSampling', { samplingInterval: 8192, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true }, (err) => {
      if (err) throw err;
      sampling = true;
      fs.writeFileSync(path.join(dir, `${process.pid}.started`), '');
    });
    return;
  }
  session.post('HeapProfiler.stopSampling', (err, result) => {
    if (err) throw err;
    sampling = false;
    fs.writeFileSync(path.join(dir, `${process.pid}.heapprofile`), JSON.stringify(result.profile));
    // Written last, under its final name at once: the bench waits for this file.
    const done = path.join(dir, `${process.pid}.json`);
    fs.writeFileSync(`${done}.tmp`, JSON.stringify({ bytes: allocated(result.profile.head) }));
    fs.renameSync(`${done}.tmp`, done);
  });
});
