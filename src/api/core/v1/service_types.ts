/**
 * core/v1 Service, as far as kubelet reads it: the cluster IP and ports its docker-link style
 * environment variables are made of. Field names as the API's JSON.
 * @module
 */
import type { ListMeta, ObjectMeta, TypeMeta } from "../../meta/v1/types.ts";
import type { IntOrString } from "./types.ts";

/** One port of a service. */
export interface ServicePort {
  name?: string;
  /** `TCP` (default), `UDP` or `SCTP`. */
  protocol?: string;
  appProtocol?: string;
  port: number;
  targetPort?: IntOrString;
  nodePort?: number;
}

/** The part of a service's spec kubelet reads (other fields pass through untyped). */
export interface ServiceSpec {
  /** An IP, `None` (headless) or empty. */
  clusterIP?: string;
  clusterIPs?: string[];
  ports?: ServicePort[];
  type?: string;
  [field: string]: unknown;
}

/** A service. */
export interface Service extends TypeMeta {
  metadata: ObjectMeta;
  spec?: ServiceSpec;
  status?: Record<string, unknown>;
}

/** A list of services as LIST returns it. */
export interface ServiceList extends TypeMeta {
  metadata: ListMeta;
  items: Service[];
}
