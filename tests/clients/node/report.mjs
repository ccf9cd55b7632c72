// What every Node driver ends with: run each case of each entry, in order, and print one JSON
// object {"<key>": {"<case>": <its result>, ...}, ...}, a case that threw as {"error": "..."}
// (with the response body an AI SDK error carries).
export async function report(entries) {
  const out = {};
  for (const [key, cases, subject] of entries) {
    const results = {};
    for (const [name, run] of Object.entries(cases)) {
      try {
        results[name] = await run(subject);
      } catch (error) {
        results[name] = { error: String(error?.stack ?? error) + (error?.responseBody ? `\n${error.responseBody}` : "") };
      }
    }
    out[key] = results;
  }
  console.log(JSON.stringify(out));
}
