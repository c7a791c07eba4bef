/**
 * Kubelet's HTTP probe: request building and the prober.
 * Mirrors kubelet's pkg/probe/http.
 * @module
 */
export {
  type CheckRedirect,
  doHTTPProbe,
  errUseLastResponse,
  type HttpClient,
  type HttpProber,
  type HttpResponse,
  maxRespBodyLength,
  newHttpClient,
  newHttpProber,
  redirectChecker,
} from "./http.ts";
export {
  formatURL,
  newProbeRequest,
  newRequestForHTTPGetAction,
  type ProbeRequest,
  type ProbeRequestResult,
  v1HeaderToHTTPHeader,
} from "./request.ts";
export {
  canonicalHeaderKey,
  type HeaderInit,
  HeaderMap,
  validHeaderFieldName,
  validHeaderFieldValue,
} from "./header.ts";
export { joinHostPort, ProbeURL } from "./url.ts";
