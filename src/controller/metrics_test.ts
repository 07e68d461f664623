import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Registry } from './metrics.js';

describe('Registry', () => {
  it('renders the text exposition format with sorted, escaped labels', () => {
    const r = new Registry();
    const c = r.counter('x_total', 'X things.');
    c.inc({ reason: 'a"b', kind: 'k' });
    c.inc({ kind: 'k', reason: 'a"b' }, 2);
    const g = r.gauge('y', 'Y now.');
    g.set({}, 1.5);
    assert.equal(
      r.render(),
      '# HELP x_total X things.\n# TYPE x_total counter\nx_total{kind="k",reason="a\\"b"} 3\n# HELP y Y now.\n# TYPE y gauge\ny 1.5\n',
    );
  });
  it('replaces a gauge series set at once', () => {
    const r = new Registry();
    const g = r.gauge('g', 'G.');
    g.set({ a: '1' }, 1);
    g.replaceAll([[{ a: '2' }, 2]]);
    assert.equal(g.get({ a: '1' }), undefined);
    assert.equal(g.get({ a: '2' }), 2);
  });
});
