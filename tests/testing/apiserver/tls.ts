/**
 * Certificates and kubeconfigs for the double's HTTPS mode, made with `openssl` at test time (like
 * scripts/kube-apiserver.sh does for the real server): one CA signs the serving certificate for
 * 127.0.0.1 and client certificates whose CN/O carry the user and groups.
 * @module
 */

/** PEM certificate and key. */
export interface CertPair {
  cert: string;
  key: string;
}

/** A CA, a serving certificate for 127.0.0.1 and one client certificate per requested user. */
export interface TestPki {
  ca: CertPair;
  server: CertPair;
  clients: Record<string, CertPair>;
}

/** True when `openssl` can run here (HTTPS tests skip with a reason otherwise). */
export async function opensslAvailable(): Promise<boolean> {
  try {
    const out = await new Deno.Command("openssl", {
      args: ["version"],
      stdout: "null",
      stderr: "null",
    })
      .output();
    return out.success;
  } catch {
    return false;
  }
}

async function openssl(dir: string, args: string[]): Promise<void> {
  const out = await new Deno.Command("openssl", {
    args,
    cwd: dir,
    stdout: "piped",
    stderr: "piped",
  })
    .output();
  if (!out.success) {
    throw new Error(`openssl ${args.join(" ")}: ${new TextDecoder().decode(out.stderr).trim()}`);
  }
}

/**
 * Makes a CA, a serving certificate (SAN IP:127.0.0.1, DNS:localhost) and client certificates,
 * e.g. `{ node: { cn: "system:node:n1", groups: ["system:nodes"] } }`. Client certificates carry
 * extendedKeyUsage=clientAuth: rustls (Deno's TLS) rejects the X.509 v1 certificates openssl
 * makes without extensions.
 */
export async function makeTestPki(
  clients: Record<string, { cn: string; groups?: string[] }>,
): Promise<TestPki> {
  const dir = await Deno.makeTempDir({ prefix: "probelet-pki-" });
  try {
    await openssl(dir, [
      "req",
      "-x509",
      "-newkey",
      "rsa:2048",
      "-nodes",
      "-days",
      "2",
      "-subj",
      "/CN=probelet-test-ca",
      "-keyout",
      "ca.key",
      "-out",
      "ca.crt",
    ]);
    const sign = async (stem: string, subject: string, ext: string) => {
      await Deno.writeTextFile(`${dir}/${stem}.ext`, ext);
      await openssl(dir, [
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-subj",
        subject,
        "-keyout",
        `${stem}.key`,
        "-out",
        `${stem}.csr`,
      ]);
      await openssl(dir, [
        "x509",
        "-req",
        "-in",
        `${stem}.csr`,
        "-CA",
        "ca.crt",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-days",
        "2",
        "-extfile",
        `${stem}.ext`,
        "-out",
        `${stem}.crt`,
      ]);
      return {
        cert: await Deno.readTextFile(`${dir}/${stem}.crt`),
        key: await Deno.readTextFile(`${dir}/${stem}.key`),
      };
    };
    const server = await sign(
      "server",
      "/CN=kube-apiserver",
      "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n",
    );
    const out: Record<string, CertPair> = {};
    let i = 0;
    for (const [name, user] of Object.entries(clients)) {
      const subject = `/CN=${user.cn}` + (user.groups ?? []).map((g) => `/O=${g}`).join("");
      out[name] = await sign(`client${i++}`, subject, "extendedKeyUsage=clientAuth\n");
    }
    return {
      ca: {
        cert: await Deno.readTextFile(`${dir}/ca.crt`),
        key: await Deno.readTextFile(`${dir}/ca.key`),
      },
      server,
      clients: out,
    };
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

function b64(text: string): string {
  return btoa(text);
}

/**
 * A kubeconfig (YAML) with inline `*-data`, as `kind get kubeconfig` writes: a client certificate
 * or a bearer token.
 */
export function kubeconfigYaml(
  options: { server: string; caCert?: string; client?: CertPair; token?: string; user?: string },
): string {
  const user = options.user ?? "probelet";
  const lines = [
    "apiVersion: v1",
    "kind: Config",
    "clusters:",
    "- name: probelet-test",
    "  cluster:",
    `    server: ${options.server}`,
    ...(options.caCert ? [`    certificate-authority-data: ${b64(options.caCert)}`] : []),
    "users:",
    `- name: ${JSON.stringify(user)}`,
    "  user:",
    ...(options.client
      ? [
        `    client-certificate-data: ${b64(options.client.cert)}`,
        `    client-key-data: ${b64(options.client.key)}`,
      ]
      : []),
    ...(options.token ? [`    token: ${JSON.stringify(options.token)}`] : []),
    ...(!options.client && !options.token ? ["    {}"] : []),
    "contexts:",
    "- name: probelet-test",
    "  context:",
    "    cluster: probelet-test",
    `    user: ${JSON.stringify(user)}`,
    "current-context: probelet-test",
    "",
  ];
  return lines.join("\n");
}
