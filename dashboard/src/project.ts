/** The project the dashboard works in, with the signed-in user's role there. */
export interface ProjectView {
  id: string;
  name: string;
  plan: string;
  role: 'owner' | 'admin' | 'viewer';
}
