/** pdf.js's parser, loaded into the page itself (it ships without type declarations). */
declare module "pdfjs-dist/build/pdf.worker.mjs" {
  export const WorkerMessageHandler: unknown;
}
