// Loaded into the measured server by bench/allocations.mjs (`node --import`): V8's sampling heap profiler, started
// on the first SIGUSR2 and stopped on the second, which writes the profile to ALLOC_PROFILE. Objects the collectors
// have already freed are kept in the profile, so it shows everything allocated while it ran, not what survived.
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';

const session = new Session();
session.connect();
const post = (method, params) =>
  new Promise((ok, fail) => session.post(method, params, (err, result) => (err ? fail(err) : ok(result))));
let sampling = false;
process.on('SIGUSR2', async () => {
  if (!sampling) {
    sampling = true;
    await post('HeapProfiler.startSampling', {
      samplingInterval: Number(process.env.ALLOC_INTERVAL ?? 256),
      includeObjectsCollectedByMajorGC: true,
      includeObjectsCollectedByMinorGC: true,
    });
    writeFileSync(`${process.env.ALLOC_PROFILE}.started`, '');
    return;
  }
  const { profile } = await post('HeapProfiler.stopSampling');
  writeFileSync(process.env.ALLOC_PROFILE, JSON.stringify(profile));
});
