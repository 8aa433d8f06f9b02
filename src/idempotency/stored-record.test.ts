import { describe, expect, it } from 'vitest';
import { isStoredFailureError } from './errors.js';
import { failureRecord, readRecord, valueRecord } from './stored-record.js';

describe('stored records', () => {
  it('a value comes back as it was; undefined too', () => {
    expect(readRecord(valueRecord({ a: [1, 'x'] }))).toEqual({ a: [1, 'x'] });
    expect(valueRecord(undefined)).toBe('{}');
    expect(readRecord(valueRecord(undefined))).toBeUndefined();
  });

  it('a kept failure keeps name, message, kind, code and status (or statusCode); replays as StoredFailureError', () => {
    const error = Object.assign(new TypeError('bad card'), { code: 'E_CARD', statusCode: 402, expose: true });
    const replay = (() => {
      try {
        readRecord(failureRecord(error, 'invalid'));
      } catch (e) {
        return e;
      }
    })();
    expect(isStoredFailureError(replay)).toBe(true);
    expect(replay).toMatchObject({
      originalName: 'TypeError',
      message: 'bad card',
      kind: 'invalid',
      code: 'E_CARD',
      status: 402,
      expose: true,
    });
  });

  it('a failure that is not an Error, or has odd fields, keeps what it can', () => {
    expect(JSON.parse(failureRecord('just a string', 'conflict'))).toEqual({
      e: { name: 'Error', message: 'just a string', kind: 'conflict', expose: false },
    });
    expect(JSON.parse(failureRecord({ name: 5, message: 6, code: 7, status: '400' }, 'invalid'))).toEqual({
      e: { name: 'Error', message: '[object Object]', kind: 'invalid', expose: false },
    });
    expect(JSON.parse(failureRecord({ status: 404, statusCode: 410 }, 'not_found')).e.status).toBe(404);
    expect(JSON.parse(failureRecord({ status: '404', statusCode: '410' }, 'not_found')).e).not.toHaveProperty(
      'status',
    );
    expect(JSON.parse(failureRecord(null, 'invalid'))).toEqual({
      e: { name: 'Error', message: 'null', kind: 'invalid', expose: false },
    });
  });
});
