import { z } from 'zod';

const micros = z.number().int();

export const usageReportSchema = z
  .looseObject({
    object: z.literal('usage'),
    project_id: z.string(),
    from: z.string(),
    to: z.string(),
    data: z.array(
      z.looseObject({
        day: z.string().meta({ example: '2026-11-24' }),
        provider: z.string().nullable(),
        model: z.string().nullable(),
        api_key_id: z.string().nullable(),
        requests: z.number().int(),
        input_tokens: z.number().int(),
        output_tokens: z.number().int(),
        cost_usd_micros: micros,
      }),
    ),
    totals: z.looseObject({ requests: z.number().int(), input_tokens: z.number().int(), output_tokens: z.number().int(), cost_usd_micros: micros }),
  })
  .meta({ id: 'UsageReport' });

export const costForecastSchema = z
  .looseObject({
    object: z.literal('cost_forecast'),
    project_id: z.string(),
    month: z.string(),
    as_of: z.string(),
    method: z.literal('linear_run_rate'),
    days_elapsed: z.number().int(),
    days_in_month: z.number().int(),
    month_to_date_usd_micros: micros,
    reserved_now_usd_micros: micros,
    run_rate_projection_usd_micros: micros,
    workflow_intents: z.looseObject({
      active: z.number().int(),
      remaining_projected_usd_micros: micros,
      data: z.array(z.looseObject({ workflow_id: z.string(), projected_cost_usd_micros: micros, actual_calls: z.number().int(), remaining_projected_usd_micros: micros })),
    }),
    projected_month_end_usd_micros: micros,
    daily: z.array(z.looseObject({ day: z.string(), settled_usd_micros: micros, reserved_usd_micros: micros })),
    caps: z.looseObject({
      monthly_usd_micros: micros.nullable(),
      daily_usd_micros: micros.nullable(),
      projected_over_monthly_cap: z.boolean(),
      today_settled_usd_micros: micros,
    }),
  })
  .meta({ id: 'CostForecast' });

const count = z.number().int();

export const promptAnalyticsSchema = z
  .looseObject({
    object: z.literal('prompt_analytics'),
    project_id: z.string(),
    from: z.string(),
    to: z.string(),
    totals: z.looseObject({ inspected: count, blocked: count, flagged: count }),
    by_model: z.array(z.looseObject({ provider: z.string().nullable(), model: z.string().nullable(), inspected: count, blocked: count, flagged: count })),
    by_category: z.array(z.looseObject({ category: z.string(), model: z.string().nullable(), blocked: count, flagged: count })),
  })
  .meta({ id: 'PromptAnalytics' });

export const billingCheckoutSchema = z
  .looseObject({ object: z.literal('billing_checkout'), project_id: z.string(), plan: z.string(), checkout_session_id: z.string(), url: z.string() })
  .meta({ id: 'BillingCheckout' });

export const billingWebhookResultSchema = z
  .looseObject({ received: z.literal(true), event_id: z.string(), duplicate: z.boolean(), applied: z.boolean(), project_id: z.string().optional(), plan: z.string().optional() })
  .meta({ id: 'BillingWebhookResult' });
