/** A span to mask: [start, end) of the text, and the kind of value (the placeholder's name). */
export interface Span {
  start: number;
  end: number;
  kind: string;
}
