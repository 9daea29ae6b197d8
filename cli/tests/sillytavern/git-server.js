// A git server over smart HTTP for the test: `git http-backend` (git's own CGI program) behind a node
// HTTP server, so that SillyTavern's "Install extension" clones the repository from a URL as it would
// from a forge (`--depth 1` needs the smart protocol). `snapshot` makes the bare repository from the
// working tree as it is (tracked and untracked files, .gitignore respected), uncommitted changes
// included, without touching the working tree, its index or its branches; `commitOnto` adds a commit
// on top of it, as a new version of the extension pushed to its forge.

import { spawn, execFileSync } from "node:child_process";
import { createServer } from "node:http";
import { mkdirSync, rmSync, mkdtempSync } from "node:fs";
import { join } from "node:path";
import { tmpdir } from "node:os";

const git = (args, options = {}) => execFileSync("git", args, { encoding: "utf8", ...options }).trim();

/** A bare repository `NAME.git` under `root` whose branch `main` holds the working tree of `source`. */
export function snapshot(source, root, name) {
  const bare = join(root, `${name}.git`);
  rmSync(bare, { recursive: true, force: true });
  mkdirSync(root, { recursive: true });
  git(["init", "--quiet", "--bare", "--initial-branch=main", bare]);
  const scratch = mkdtempSync(join(tmpdir(), "statecraft-index-"));
  try {
    const env = { ...process.env, GIT_INDEX_FILE: join(scratch, "index") };
    git(["-C", source, "add", "--all", "."], { env });
    const tree = git(["-C", source, "write-tree"], { env });
    const commit = git(
      ["-C", source, "-c", "user.name=test", "-c", "user.email=test@localhost", "commit-tree", tree, "-m", "the working tree under test"],
      { env },
    );
    git(["-C", source, "push", "--quiet", bare, `${commit}:refs/heads/main`]);
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
  git(["-C", bare, "update-server-info"]);
  return bare;
}

/**
 * A new commit on branch `main` of the bare repository `bare`, whose parent is the branch's head: the
 * head's tree with the files `edit(path, text)` gives for each path of `paths` (`edit` gets the file's
 * text at the head). Made with git's plumbing in the bare repository, so no working tree is touched;
 * a clone of `main` sees it as an update it can fast-forward to. → the new commit's hash.
 */
export function commitOnto(bare, paths, edit, message) {
  const scratch = mkdtempSync(join(tmpdir(), "statecraft-index-"));
  try {
    const env = { ...process.env, GIT_INDEX_FILE: join(scratch, "index") };
    const head = git(["--git-dir", bare, "rev-parse", "refs/heads/main"]);
    git(["--git-dir", bare, "read-tree", head], { env });
    for (const path of paths) {
      const text = edit(path, execFileSync("git", ["--git-dir", bare, "show", `${head}:${path}`], { encoding: "utf8" }));
      const blob = git(["--git-dir", bare, "hash-object", "-w", "--stdin"], { input: text });
      git(["--git-dir", bare, "update-index", "--cacheinfo", `100644,${blob},${path}`], { env });
    }
    const tree = git(["--git-dir", bare, "write-tree"], { env });
    const commit = git(["--git-dir", bare, "-c", "user.name=test", "-c", "user.email=test@localhost", "commit-tree", tree, "-p", head, "-m", message]);
    git(["--git-dir", bare, "update-ref", "refs/heads/main", commit, head]);
    git(["--git-dir", bare, "update-server-info"]);
    return commit;
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

/** The commit branch `main` of the bare repository `bare` is at. */
export function head(bare) {
  return git(["--git-dir", bare, "rev-parse", "refs/heads/main"]);
}

/** Serves every bare repository under `root` at `http://127.0.0.1:PORT/NAME.git`. */
export async function serveGit(root) {
  const server = createServer((request, response) => {
    const url = new URL(request.url, "http://localhost");
    const cgi = spawn("git", ["http-backend"], {
      env: {
        ...process.env,
        GIT_PROJECT_ROOT: root,
        GIT_HTTP_EXPORT_ALL: "1",
        PATH_INFO: decodeURIComponent(url.pathname),
        QUERY_STRING: url.search.slice(1),
        REQUEST_METHOD: request.method,
        CONTENT_TYPE: request.headers["content-type"] ?? "",
        HTTP_CONTENT_ENCODING: request.headers["content-encoding"] ?? "",
        HTTP_GIT_PROTOCOL: request.headers["git-protocol"] ?? "",
        REMOTE_ADDR: "127.0.0.1",
      },
    });
    request.pipe(cgi.stdin);
    let head = Buffer.alloc(0);
    let headersDone = false;
    cgi.stdout.on("data", (chunk) => {
      if (headersDone) {
        response.write(chunk);
        return;
      }
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf("\r\n\r\n");
      if (end < 0) return;
      headersDone = true;
      let status = 200;
      for (const line of head.subarray(0, end).toString("latin1").split("\r\n")) {
        const colon = line.indexOf(":");
        const name = line.slice(0, colon).trim();
        const value = line.slice(colon + 1).trim();
        if (name.toLowerCase() === "status") status = Number.parseInt(value, 10);
        else response.setHeader(name, value);
      }
      response.writeHead(status);
      response.write(head.subarray(end + 4));
    });
    cgi.stdout.on("end", () => response.end());
    cgi.on("error", () => {
      response.writeHead(500);
      response.end();
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${server.address().port}`, close: () => new Promise((resolve) => server.close(resolve)) };
}
