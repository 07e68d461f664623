// Kubernetes Events for every action, the audit trail `kubectl describe` shows. Repeats of
// one (object, reason, message) are folded into one Event with a count, as client-go's
// correlator does, so a retry loop does not flood etcd.
import { isNotFound, type KubeClient } from '../../kube/index.js';
import {
  apiVersionOf,
  Resources,
  type KubeObject,
  type NewObject,
  type ResourceType,
} from '../../kube/resources.js';
import type { Logger } from '../../log/logger.js';
import { redact } from '../../log/redact.js';
import { keyText, keyTextOf } from '../../api/object-key.js';

export type EventType = 'Normal' | 'Warning';

export interface RecordedEvent {
  object: string;
  reason: string;
  message: string;
  type: EventType;
}

const COMPONENT = 'harvester-machine-controller';
const MAX_MESSAGE = 1024;
const MAX_REMEMBERED = 2000;

export class EventRecorder {
  private readonly seen = new Map<string, { name: string; namespace: string; count: number }>();
  /** Writes run behind the action they report, as client-go's broadcaster does. */
  private readonly pending: Array<() => Promise<void>> = [];
  private running = 0;
  private drained: Array<() => void> = [];

  constructor(
    private readonly client: KubeClient,
    private readonly logger: Logger,
    private readonly instance: string,
    private readonly now: () => Date = () => new Date(),
  ) {}

  /**
   * Logs at once and writes the Event in the background, a few at a time. Never throws: an Event that cannot be written is logged, the action stands.
   */
  record(
    type: ResourceType,
    object: KubeObject,
    eventType: EventType,
    reason: string,
    message: string,
  ): void {
    const text = redact(message).slice(0, MAX_MESSAGE);
    (eventType === 'Warning' ? this.logger.warn.bind(this.logger) : this.logger.info.bind(this.logger))(
      text,
      {
        event: reason,
        object: `${type.kind} ${keyTextOf(object)}`,
      },
    );
    this.pending.push(() => this.write(type, object, eventType, reason, text));
    this.pump();
  }

  private pump(): void {
    while (this.running < 4 && this.pending.length > 0) {
      const job = this.pending.shift() as () => Promise<void>;
      this.running++;
      void job().finally(() => {
        this.running--;
        this.pump();
      });
    }
    if (this.running === 0 && this.pending.length === 0) for (const d of this.drained.splice(0)) d();
  }

  /** Resolves once every recorded Event was written (or failed). */
  drain(): Promise<void> {
    if (this.running === 0 && this.pending.length === 0) return Promise.resolve();
    return new Promise((r) => this.drained.push(r));
  }

  private async write(
    type: ResourceType,
    object: KubeObject,
    eventType: EventType,
    reason: string,
    text: string,
  ): Promise<void> {
    const namespace = object.metadata.namespace ?? 'default';
    const key = `${object.metadata.uid ?? keyText(namespace, object.metadata.name)}|${reason}|${text}`;
    const stamp = this.now()
      .toISOString()
      .replace(/\.\d{3}Z$/, 'Z');
    try {
      const known = this.seen.get(key);
      if (known) {
        known.count++;
        try {
          await this.client.patch(
            Resources.event,
            { namespace: known.namespace, name: known.name },
            { count: known.count, lastTimestamp: stamp },
          );
          return;
        } catch (err) {
          if (!isNotFound(err)) throw err;
          this.seen.delete(key);
        }
      }
      const created = await this.client.create<KubeObject>(Resources.event, {
        apiVersion: 'v1',
        kind: 'Event',
        metadata: { generateName: `${object.metadata.name || 'object'}.`, namespace },
        involvedObject: {
          apiVersion: apiVersionOf(type),
          kind: type.kind,
          name: object.metadata.name,
          namespace: object.metadata.namespace,
          uid: object.metadata.uid,
        },
        reason,
        message: text,
        type: eventType,
        count: 1,
        firstTimestamp: stamp,
        lastTimestamp: stamp,
        source: { component: COMPONENT },
        reportingComponent: COMPONENT,
        reportingInstance: this.instance,
      } as NewObject<KubeObject>);
      if (this.seen.size >= MAX_REMEMBERED) this.seen.delete(this.seen.keys().next().value as string);
      this.seen.set(key, { name: created.metadata.name, namespace, count: 1 });
    } catch (err) {
      this.logger.warn('cannot write Event', {
        reason,
        error: err instanceof Error ? err.message : String(err),
      });
    }
  }
}
