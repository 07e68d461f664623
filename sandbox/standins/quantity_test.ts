import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { compareQuantities, formatBinaryQuantity, parseQuantity } from './quantity.js';

describe('quantities', () => {
  it('parses binary, decimal, fractional and exponent forms exactly', () => {
    assert.equal(parseQuantity('40Gi'), 40n * 2n ** 30n);
    assert.equal(parseQuantity('10G'), 10_000_000_000n);
    assert.equal(parseQuantity('1.5Gi'), 3n * 2n ** 29n);
    assert.equal(parseQuantity('1e3'), 1000n);
    assert.equal(parseQuantity('500m'), 1n); // rounded up to a whole unit
    assert.equal(parseQuantity('1536'), 1536n);
    assert.throws(() => parseQuantity('12 GB'), /regular expression/);
  });

  it('compares across notations', () => {
    assert.equal(compareQuantities('1Gi', '1024Mi'), 0);
    assert.equal(compareQuantities('1G', '1Gi'), -1);
    assert.equal(compareQuantities('2Gi', '2G'), 1);
  });

  it('formats bytes canonically', () => {
    assert.equal(formatBinaryQuantity(10n * 2n ** 20n), '10Mi');
    assert.equal(formatBinaryQuantity(2048n * 2n ** 20n), '2Gi');
    assert.equal(formatBinaryQuantity(1536n), '1536');
  });
});
