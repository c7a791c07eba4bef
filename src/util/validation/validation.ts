/**
 * Syntax checks of label keys and values with apimachinery's error texts, so a bad
 * `--node-labels` or `--register-with-taints` is reported the way kubelet reports it.
 * Mirrors k8s.io/apimachinery/pkg/util/validation (IsQualifiedName, IsValidLabelValue,
 * IsDNS1123Subdomain).
 * @module
 */

const qnameCharFmt = "[A-Za-z0-9]";
const qnameExtCharFmt = "[-A-Za-z0-9_.]";
const qualifiedNameFmt = `(${qnameCharFmt}${qnameExtCharFmt}*)?${qnameCharFmt}`;
const qualifiedNameErrMsg = "must consist of alphanumeric characters, '-', '_' or '.', " +
  "and must start and end with an alphanumeric character";
const qualifiedNameMaxLength = 63;
const qualifiedNameRegexp = new RegExp(`^${qualifiedNameFmt}$`);

const labelValueFmt = `(${qualifiedNameFmt})?`;
const labelValueErrMsg = "a valid label must be an empty string or consist of alphanumeric " +
  "characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const labelValueMaxLength = 63;
const labelValueRegexp = new RegExp(`^${labelValueFmt}$`);

const dns1123LabelFmt = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const dns1123SubdomainFmt = `${dns1123LabelFmt}(\\.${dns1123LabelFmt})*`;
const dns1123SubdomainErrorMsg = "a lowercase RFC 1123 subdomain must consist of lower case " +
  "alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const dns1123SubdomainMaxLength = 253;
const dns1123SubdomainRegexp = new RegExp(`^${dns1123SubdomainFmt}$`);

/** apimachinery's RegexError: the message, examples and the pattern used. */
function regexError(msg: string, fmt: string, ...examples: string[]): string {
  if (examples.length === 0) return `${msg} (regex used for validation is '${fmt}')`;
  return `${msg} (e.g. ${
    examples.map((e) => `'${e}', `).join(" or ")
  }regex used for validation is '${fmt}')`;
}

function maxLenError(n: number): string {
  return `must be no more than ${n} characters`;
}

/**
 * Errors of a qualified name (`[prefix/]name`, as label keys and taint keys are); empty when valid.
 *
 * @example
 * ```ts
 * isQualifiedName("probelet.io/agent"); // []
 * isQualifiedName("a/b/c").length; // 1
 * ```
 */
export function isQualifiedName(value: string): string[] {
  const errs: string[] = [];
  const parts = value.split("/");
  let name: string;
  if (parts.length === 1) {
    name = parts[0];
  } else if (parts.length === 2) {
    const prefix = parts[0];
    name = parts[1];
    if (prefix.length === 0) errs.push("prefix part must be non-empty");
    else errs.push(...isDNS1123Subdomain(prefix).map((e) => `prefix part ${e}`));
  } else {
    return [
      "a qualified name " +
      regexError(qualifiedNameErrMsg, qualifiedNameFmt, "MyName", "my.name", "123-abc") +
      " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
    ];
  }
  if (name.length === 0) errs.push("name part must be non-empty");
  else if (name.length > qualifiedNameMaxLength) {
    errs.push(`name part ${maxLenError(qualifiedNameMaxLength)}`);
  }
  if (!qualifiedNameRegexp.test(name)) {
    errs.push(
      "name part " +
        regexError(qualifiedNameErrMsg, qualifiedNameFmt, "MyName", "my.name", "123-abc"),
    );
  }
  return errs;
}

/**
 * Errors of a label value (empty, or up to 63 characters of `[-A-Za-z0-9_.]` starting and
 * ending with an alphanumeric character); empty when valid.
 *
 * @example
 * ```ts
 * isValidLabelValue("true"); // []
 * ```
 */
export function isValidLabelValue(value: string): string[] {
  const errs: string[] = [];
  if (value.length > labelValueMaxLength) errs.push(maxLenError(labelValueMaxLength));
  if (!labelValueRegexp.test(value)) {
    errs.push(regexError(labelValueErrMsg, labelValueFmt, "MyValue", "my_value", "12345"));
  }
  return errs;
}

/**
 * Errors of a lowercase RFC 1123 subdomain (`example.com`); empty when valid.
 *
 * @example
 * ```ts
 * isDNS1123Subdomain("Example.com").length; // 1
 * ```
 */
export function isDNS1123Subdomain(value: string): string[] {
  const errs: string[] = [];
  if (value.length > dns1123SubdomainMaxLength) errs.push(maxLenError(dns1123SubdomainMaxLength));
  if (!dns1123SubdomainRegexp.test(value)) {
    errs.push(regexError(dns1123SubdomainErrorMsg, dns1123SubdomainFmt, "example.com"));
  }
  return errs;
}

const dns1123LabelErrMsg = "a lowercase RFC 1123 label must consist of lower case alphanumeric " +
  "characters or '-', and must start and end with an alphanumeric character";
const dns1123LabelMaxLength = 63;
const dns1123LabelRegexp = new RegExp(`^${dns1123LabelFmt}$`);

/**
 * Errors of a lowercase RFC 1123 label (`my-name`); empty when valid.
 *
 * @example
 * ```ts
 * isDNS1123Label("my.name").length; // 1
 * ```
 */
export function isDNS1123Label(value: string): string[] {
  const errs: string[] = [];
  if (value.length > dns1123LabelMaxLength) errs.push(maxLenError(dns1123LabelMaxLength));
  if (!dns1123LabelRegexp.test(value)) {
    errs.push(regexError(dns1123LabelErrMsg, dns1123LabelFmt, "my-name", "123-abc"));
  }
  return errs;
}
