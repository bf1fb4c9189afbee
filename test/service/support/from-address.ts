/**
 * HTTP requests from a chosen loopback source address (127.0.0.0/8 is all loopback on Linux),
 * each on a fresh connection, so that per-address shares are tested over real sockets.
 */
import { request } from "node:http";

export interface AddressedAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

export interface AddressedRequest {
  method?: string;
  path: string;
  headers?: Record<string, string>;
  body?: string | Uint8Array;
}

export function requestFrom(
  port: number,
  localAddress: string,
  { method = "GET", path, headers = {}, body }: AddressedRequest,
): Promise<AddressedAnswer> {
  return new Promise((resolve, reject) => {
    const outgoing = request(
      { host: "127.0.0.1", port, path, localAddress, agent: false, method, headers },
      (response) => {
        const chunks: Buffer[] = [];
        response.on("data", (chunk: Buffer) => chunks.push(chunk));
        response.on("end", () =>
          resolve({
            status: response.statusCode ?? 0,
            headers: response.headers,
            body: Buffer.concat(chunks).toString("utf8"),
          }),
        );
        response.on("error", reject);
      },
    );
    outgoing.on("error", reject);
    outgoing.end(body);
  });
}
